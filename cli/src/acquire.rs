//! `acquire RESOURCE [--ttl T] [-n | --wait W] [KIND] -- COMMAND...`: takes the lock (renewed every
//! third of its TTL, labeled for `inspect`), runs the command, releases the lock when it ends and
//! exits with its code — `flock(1)` and `etcdctl lock` for a Redlock.
//!
//! - **Waiting**: until the lock is granted by default ([`Wait::Forever`]), at most `--wait`
//!   ([`Wait::UpTo`]), or one attempt with `-n` ([`Wait::Once`]). A refusal exits by its
//!   [`ErrorClass`](redlock_engine::ErrorClass) (`exit::not_locked`): busy 75, unavailable 3,
//!   invalid 2. SIGINT, SIGTERM or SIGHUP while waiting drop the request and exit 128 + N. Either
//!   way the library withdraws whatever the attempts set (keys, a fair waiter's place, a writer's
//!   intent), and `redlock` exits only once the nodes have taken those commands ([`settle`]).
//! - **The command** gets `REDLOCK_RESOURCE` and, with `--fenced`, `REDLOCK_FENCING_TOKEN`, and runs
//!   in a process group of its own (`command`). Signals to `redlock` are passed on to the group.
//! - **A lost lock** (a renewal could not win a majority, or its validity ended): the group gets
//!   SIGTERM at once — it no longer holds what it was promised — then SIGKILL after `--kill-after`,
//!   and `redlock` exits with [`LOST`](crate::exit::LOST).

use std::future::IntoFuture;
use std::time::Duration;

use redlock_engine::{LockError, LockRequest, Redlock, RenewPolicy, Wait};

use crate::args::{Acquire, Options};
use crate::exit::{not_locked, Failure, SIGNALLED};
use crate::signals::Signals;

pub async fn run(opts: &Options, args: &Acquire) -> Result<u8, Failure> {
    // Before anything is taken: a signal that arrives while the lock is being acquired or the
    // command started is then seen below instead of killing this process with the lock held.
    let mut signals = Signals::install()?;
    let label = args
        .label
        .clone()
        .unwrap_or_else(|| default_label(&args.command));
    // `--label ''`: no label at all.
    let label = Some(clean(&label)).filter(|l| !l.is_empty());
    let mut engine = crate::connect::engine(opts, label).await?;
    let plain = !(args.shared || args.write || args.fenced || args.fair) && args.permits.is_none();
    let no_scripts = engine
        .nodes_status()
        .iter()
        .any(|n| n.scripts == Some(false));
    if no_scripts && plain && args.label.is_none() {
        // A label is written by a script, which such a node's user may not run; a plain lock works
        // there on native commands. An explicit --label still asks for one (and is refused, saying
        // what to do).
        eprintln!(
            "redlock: note: a node's lock user may not run scripts: the lock carries no holder label"
        );
        engine = crate::connect::engine(opts, None).await?;
    }
    let taken = request(&engine, args).renewed(RenewPolicy::default());
    let lock = take(
        &engine,
        opts,
        &args.resource,
        &mut signals,
        taken,
        not_locked,
    )
    .await?;
    let mut env = vec![("REDLOCK_RESOURCE", args.resource.clone())];
    if let Some(token) = lock.fencing_token() {
        env.push(("REDLOCK_FENCING_TOKEN", token.to_string()));
    }
    let what = format!("lock on {:?}", args.resource);
    crate::held::run_command(lock, &what, signals, &env, &args.command, args.kill_after).await
}

/// The request `args` describe: its kind, TTL and wait.
fn request<'a>(engine: &'a Redlock, args: &Acquire) -> LockRequest<'a> {
    let request = engine
        .lock(&args.resource)
        .ttl(args.ttl)
        .wait(wait(args.nonblock, args.wait));
    // At most one of them: clap's `kind` group.
    match args.permits {
        Some(k) => request.permits(k),
        None if args.shared => request.read(),
        None if args.write => request.write(),
        None if args.fenced => request.fenced(),
        None if args.fair => request.fair(),
        None => request,
    }
}

/// `-n` or `--wait 0`: one attempt; `--wait D`: up to D; neither: the library's default, until
/// granted while another owner holds it (an outage ends the wait with its error). `elect`'s too.
pub fn wait(nonblock: bool, wait: Option<Duration>) -> Wait {
    match wait {
        _ if nonblock => Wait::Once,
        Some(d) if d.is_zero() => Wait::Once,
        Some(d) => Wait::UpTo(d),
        None => Wait::UntilAcquired,
    }
}

/// Waits for `taken` (a lock's request or an election's campaign on `resource`) unless a signal
/// comes first, the one wait of `acquire` and `elect`. A refusal is `refused`'s failure, a signal
/// [`interrupted`]'s; either way the request is dropped and its clean-up [`settle`]d before the
/// failure is returned.
pub async fn take<T>(
    engine: &Redlock,
    opts: &Options,
    resource: &str,
    signals: &mut Signals,
    taken: impl IntoFuture<Output = Result<T, LockError>>,
    refused: fn(&str, &LockError) -> Failure,
) -> Result<T, Failure> {
    let taken = tokio::select! {
        taken = taken.into_future() => taken.map_err(|e| refused(resource, &e)),
        // `select!` has dropped the request by now: its clean-up is queued on the connections.
        sig = signals.recv() => Err(interrupted(resource, sig)),
    };
    if taken.is_err() {
        settle(engine, opts, resource).await;
    }
    taken
}

/// Waits until the nodes have taken what a request that ended without the lock queued for them —
/// a release of keys a round set, a fair waiter leaving its queue, a writer withdrawing its intent
/// (the library fires these without waiting). Exiting at once could end the connections' tasks
/// before they are written, and a writer's intent left behind would hold readers back for a TTL.
/// One more round trip on the same connections — an inspect, queued after them, so answered after
/// them — shows they have been served. Bounded: a node that does not answer has the library's
/// re-sends and the keys' TTL.
async fn settle(engine: &Redlock, opts: &Options, resource: &str) {
    let bound = crate::connect::connect_timeout(opts).max(Duration::from_millis(100)) * 2;
    let _ = tokio::time::timeout(bound, engine.inspect(resource)).await;
}

/// A signal stopped the wait (`sig`: its number): exit 128 + N, as a shell would report it.
fn interrupted(resource: &str, sig: i32) -> Failure {
    Failure::new(
        SIGNALLED + sig as u8,
        format!(
            "{} while waiting for the lock on {resource:?}: nothing is held",
            signal_name(sig)
        ),
    )
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// `redlock acquire on HOST pid N: COMMAND`.
fn default_label(command: &[String]) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    format!(
        "redlock acquire on {host} pid {}: {}",
        std::process::id(),
        command.join(" ")
    )
}

/// A label the library accepts: control characters dropped, at most 256 bytes (on a char boundary).
fn clean(label: &str) -> String {
    let mut out: String = label.chars().filter(|c| !c.is_control()).collect();
    while out.len() > 256 {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_cleaned_to_what_the_library_takes() {
        assert_eq!(clean("a\tb\nc"), "abc");
        let long = clean(&"é".repeat(200));
        assert!(long.len() <= 256 && long.chars().all(|c| c == 'é'));
        assert!(default_label(&["sleep".into(), "5".into()]).ends_with(": sleep 5"));
    }
}
