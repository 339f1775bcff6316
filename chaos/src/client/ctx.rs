//! What every task of a client process shares: the options, the engine, the log, the clock map, and
//! the stop (a flag for the loops, a watch for tasks that wait on it), set by the stop file or the
//! hard deadline.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redlock_engine::Redlock;
use tokio::sync::watch;

use crate::clock::{mono_ns, wall_ns, InstantMap};
use crate::counter::Counter;
use crate::record::{drift_ns, Log};

use super::args::ClientArgs;

/// Upper bound on rounds per task, so no loop is unbounded even if the stop signal never comes.
pub const MAX_ROUNDS: u64 = 10_000_000;

/// What every task of the process shares.
pub struct Ctx {
    pub args: ClientArgs,
    pub redlock: Redlock,
    pub log: Log,
    pub map: InstantMap,
    stop: AtomicBool,
    /// The same stop, for tasks that wait on it (thousands of renewed holders must not poll a flag).
    stop_tx: watch::Sender<bool>,
    pub ttl: Duration,
    pub drift_ns: u64,
    /// `valid_until` (raw ns) of the lock each resource's last local holder released: a lock handed
    /// over with a later one was extended on take-over. (Only the local queue's head holds a lock, so
    /// the entry is the hand-off's own, except after a holder's validity ran out; then it is a figure
    /// off by one, never a check.)
    pub released_until: Mutex<HashMap<String, u64>>,
}

impl Ctx {
    /// The shared context of a process whose engine is `redlock`, its log `log`, its locks' TTL `ttl`.
    pub fn new(args: ClientArgs, redlock: Redlock, log: Log, ttl: Duration) -> Self {
        Self {
            redlock,
            log,
            map: InstantMap::new(),
            stop: AtomicBool::new(false),
            stop_tx: watch::channel(false).0,
            ttl,
            drift_ns: drift_ns(ttl),
            released_until: Mutex::default(),
            args,
        }
    }

    /// A task's own connection to the lost-update probe's storage node (`--storage`), if the process
    /// has one.
    pub async fn counter(&self) -> Result<Option<Counter>, String> {
        let Some(port) = self.args.storage else {
            return Ok(None);
        };
        Counter::connect(port)
            .await
            .map(Some)
            .map_err(|e| format!("storage :{port}: {e}"))
    }

    /// Whether the process has been told to stop.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Tells every task to stop.
    pub fn set_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.stop_tx.send_replace(true);
    }

    /// A receiver that sees `true` once the process is told to stop.
    pub fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop_tx.subscribe()
    }
}

/// Sets `stop` when the stop file appears or the hard deadline passes; logs wall-clock samples.
pub async fn watch_stop(ctx: Arc<Ctx>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(ctx.args.max_secs);
    let mut tick = 0u64;
    while !ctx.stop.load(Ordering::Relaxed) {
        if ctx.args.stop_file.exists() || tokio::time::Instant::now() >= deadline {
            ctx.set_stop();
        }
        if ctx.args.wall_samples && tick.is_multiple_of(5) {
            ctx.log.wall(wall_ns(), mono_ns());
        }
        tick += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
