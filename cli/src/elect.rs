//! `elect NAME [--value V] [--ttl T] [-n | --wait W] -- COMMAND...`: campaigns in the election NAME,
//! runs the command while leader, resigns when it ends and exits with its code — `etcdctl elect`
//! with a command, on the library's [`Election`](redlock_engine::Election).
//!
//! Everything but the election is `acquire`'s: the wait and its refusals (busy 75, unavailable 3,
//! invalid 2; a signal while waiting exits 128 + N with nothing left on the nodes), the command in
//! a process group of its own with signals passed on, and a lost leadership stopping the whole
//! group (SIGTERM, SIGKILL after `--kill-after`, exit [`LOST`](crate::exit::LOST)). The command gets
//! `REDLOCK_ELECTION`, `REDLOCK_TERM` and `REDLOCK_LEADER_VALUE`.

use redlock_engine::{LockError, RenewPolicy};

use crate::acquire::{take, wait};
use crate::args::{Elect, Options};
use crate::exit::{not_locked, Failure};
use crate::signals::Signals;

pub async fn run(opts: &Options, args: &Elect) -> Result<u8, Failure> {
    // Before anything is taken (see `acquire::run`).
    let mut signals = Signals::install()?;
    let engine = crate::connect::engine(opts, None).await?;
    let value = args.value.clone().unwrap_or_else(default_value);
    let election = engine
        .election(&args.name)
        .ttl(args.ttl)
        .renewal(RenewPolicy::default());
    let campaign = election
        .campaign(&value)
        .wait(wait(args.nonblock, args.wait));
    let leadership = take(
        &engine,
        opts,
        &args.name,
        &mut signals,
        campaign,
        not_elected,
    )
    .await?;
    let env = [
        ("REDLOCK_ELECTION", args.name.clone()),
        ("REDLOCK_TERM", leadership.term().to_string()),
        ("REDLOCK_LEADER_VALUE", value),
    ];
    let what = format!("leadership of {:?}", args.name);
    crate::held::run_command(
        leadership,
        &what,
        signals,
        &env,
        &args.command,
        args.kill_after,
    )
    .await
}

/// A campaign that ended without leadership: `acquire`'s codes (busy, unavailable, invalid), in
/// the election's words.
fn not_elected(name: &str, e: &LockError) -> Failure {
    let code = not_locked(name, e).code;
    Failure::new(code, format!("not elected leader of {name:?}: {e}"))
}

/// `HOST pid N`: who leads, for `redlock leader`.
fn default_value() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    format!("{host} pid {}", std::process::id())
}
