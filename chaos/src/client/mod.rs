//! `chaos client`: one client process. Its tasks loop over acquire → critical section → release on a few
//! shared resources and log every attempt and grant (see [`crate::record`]). It is a real process so the
//! orchestrator can freeze it (SIGSTOP) or run it under libfaketime.
//!
//! The critical section is the lost-update probe: read the resource's counter on the storage node,
//! sleep, then — only if the lock is still valid — write it back plus one. A holder that finds its lock
//! expired after the pause skips the write and tries `extend` (which must fail), as a careful client would.
//!
//! With a storage node the locks are fenced (`try_acquire_fenced`), and the critical section also
//! writes to the fenced store with the lock's token, after the counter write and **whether or not the
//! lock is still valid**: the store, not the client's clock, decides. A late holder's write is rejected
//! once a later holder's has been accepted.
//!
//! `--lock` picks the lock kind ([`LockMode`]): one attempt of an exclusive lock (the default, above),
//! or the waiting calls — `acquire_many` on a pair of resources, `acquire_read`/`acquire_write`,
//! `acquire` with the local queue and release notifications, a semaphore's `acquire_permit` or
//! `acquire_slot`, or `acquire_fair`. Their critical sections are in
//! [`section`]. `--lock elect` and `--lock observe` are no lock: a candidate and an observer of an
//! election ([`elect`]).

//!
//! - this file: the process — the engine from the options, the tasks of the lock mode, the exit code;
//! - [`args`]: the options ([`ClientArgs`], [`LockMode`]) and the command line that reproduces them;
//! - [`ctx`]: what every task of the process shares ([`ctx::Ctx`]: engine, log, clock map, the stop);
//! - [`worker`]: the acquire loop of the exclusive, many, rw and wait modes;
//! - [`section`]: their critical section on the counter (and its mirror), and the release;
//! - [`renewed`]: `--lock renewed` (scenario 15): renewed-lock holders and the load beside them;
//! - [`fair`]: `--lock fair` (scenario 19): fair-lock waiters, each call logged with its rounds, which
//!   [`round_tap`] reads off the engine's tracing events;
//! - [`elect`]: `--lock elect` and `--lock observe` (scenario 20): an election's candidate, whose
//!   leader logs its claims, and its observer.

mod args;
mod ctx;
mod elect;
mod fair;
mod renewed;
mod round_tap;
mod section;
mod worker;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use redlock_engine::{Config, Redlock};

use crate::record::Log;

pub use args::{ClientArgs, LockMode};
use ctx::{watch_stop, Ctx};

/// Runs the client; non-zero exit on any setup or storage error.
pub fn main(args: ClientArgs) -> ExitCode {
    // One thread per process: parallelism comes from several processes, as in a real deployment.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match rt.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chaos client: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Builds the engine and the shared context, runs the tasks of the lock mode until they end.
async fn run(args: ClientArgs) -> Result<(), String> {
    let log = Log::create(&args.log).map_err(|e| format!("log {}: {e}", args.log.display()))?;
    if args.lock == LockMode::Fair {
        round_tap::install()?;
    }
    let ttl = Duration::from_millis(args.ttl_ms);
    let defaults = Config::default();
    let config = Config {
        nodes: args.nodes.clone(),
        node_timeout: (args.node_timeout_ms > 0)
            .then(|| Duration::from_millis(args.node_timeout_ms)),
        min_validity_factor: args.min_validity,
        // 0 (the default): one attempt per call, so each logged call is one validity measurement.
        retry_count: args.retries,
        connect_timeout: Duration::from_secs(1),
        max_in_flight: args.max_in_flight.unwrap_or(defaults.max_in_flight),
        // Renewed holders cannot tell a local hand-off from a grant (see [`renewed`]); the fair
        // lock's control contends task by task, so that its waiters race each other on the nodes.
        local_queue: defaults.local_queue && args.lock != LockMode::Renewed && !args.unordered,
        // The control must race, not queue: the plain lock's cross-process hand-off orders waiters.
        cross_process_handoff: defaults.cross_process_handoff && !args.unordered,
        // With the quarantine, a restarted node must not vote for as long as any lock of ours can live.
        quarantine: args.quarantine,
        max_ttl: if args.quarantine {
            args.max_ttl_ms.map_or(ttl, Duration::from_millis)
        } else {
            defaults.max_ttl
        },
        clock_guard: !args.no_clock_guard,
        acquire_timeout: args
            .acquire_timeout_ms
            .map(Duration::from_millis)
            .or(defaults.acquire_timeout),
        ..defaults
    };
    let redlock = Redlock::new(config)
        .await
        .map_err(|e| format!("engine: {e}"))?;
    let ctx = Arc::new(Ctx::new(args, redlock, log, ttl));
    let watcher = tokio::spawn(watch_stop(ctx.clone()));
    let workers: Vec<_> = match ctx.args.lock {
        LockMode::Renewed => renewed::spawn(&ctx),
        LockMode::Fair => (0..ctx.args.tasks)
            .map(|i| tokio::spawn(fair::run(ctx.clone(), i)))
            .collect(),
        // One candidate or observer per process: a process is what the faults kill and freeze.
        LockMode::Elect => vec![tokio::spawn(elect::candidate(ctx.clone()))],
        LockMode::Observe => vec![tokio::spawn(elect::observer(ctx.clone()))],
        _ => (0..ctx.args.tasks)
            .map(|i| tokio::spawn(worker::run(ctx.clone(), i)))
            .collect(),
    };
    let mut result = Ok(());
    for w in workers {
        match w.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => result = Err(e),
            Err(e) => result = Err(format!("worker panicked: {e}")),
        }
    }
    ctx.set_stop();
    let _ = watcher.await;
    result
}
