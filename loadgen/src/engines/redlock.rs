//! `redlock` and `redlock-fred`: this project's engine, through its public `acquire`/`release`.
//!
//! `acquire` is called as is (its retry loop, in-process queueing and all), so what is measured is what a
//! user gets. `--waiting` picks the engine's waiting features ([`Waiting`]): `smart` is the engine's
//! defaults, `plain` turns off the local queue, release notifications and local hand-off, leaving the
//! randomized retry backoff. Attempts come from [`Lock::attempts`]: attempts on the nodes, 0 for a lock
//! handed over by another task of this process; a failed acquire does not say, so it is not counted.

use std::time::Duration;

use redlock_engine::{Builder, Lock, LockError, Redlock, Transport};

use super::{Acquired, LockClient, RetrySpec, Waiting};
use crate::workload::LockKind;

/// A connected engine plus the workload's TTL and retry policy.
#[derive(Debug)]
pub struct RedlockClient {
    engine: Redlock,
    ttl: Duration,
    lock: LockKind,
}

impl RedlockClient {
    /// Connects to every node over `transport`; fails unless every node is connected.
    pub async fn connect(
        urls: &[String],
        transport: Transport,
        ttl: Duration,
        retry: RetrySpec,
        waiting: Waiting,
    ) -> Result<Self, String> {
        let engine = build(urls, transport, retry, waiting).await?;
        Ok(Self::new(engine, ttl))
    }

    /// A client on an engine built elsewhere (see [`builder`]).
    pub fn new(engine: Redlock, ttl: Duration) -> Self {
        Self {
            engine,
            ttl,
            lock: LockKind::Exclusive,
        }
    }

    /// Takes `lock` instead of the exclusive lock (`--lock`).
    pub fn taking(mut self, lock: LockKind) -> Self {
        self.lock = lock;
        self
    }
}

/// Builds an engine with the given waiting features and checks that every node is connected.
pub async fn build(
    urls: &[String],
    transport: Transport,
    retry: RetrySpec,
    waiting: Waiting,
) -> Result<Redlock, String> {
    finish(builder(urls, transport, retry, waiting), transport).await
}

/// The builder [`build`] uses, for callers that set more (the overload scenarios' `acquire_timeout`).
pub fn builder(
    urls: &[String],
    transport: Transport,
    retry: RetrySpec,
    waiting: Waiting,
) -> Builder {
    let builder = Redlock::builder()
        .nodes(urls.iter().cloned())
        .transport(transport)
        .retry(retry.retries, retry.delay, retry.jitter)
        .connect_timeout(Duration::from_secs(2))
        // A load run measures the command stream, which quarantine does not change; and spawned nodes
        // are fresh, so with it on they would not vote for the first max_ttl.
        .quarantine(false)
        // `LOADGEN_SCRIPTS_ONLY=1`: the scripts on every server, to compare with the native
        // commands a Valkey 9 node gets by default (`Config::native_commands`).
        .native_commands(std::env::var_os("LOADGEN_SCRIPTS_ONLY").is_none());
    with_waiting(builder, waiting)
}

/// Builds the engine and checks that every node is connected.
pub async fn finish(builder: Builder, transport: Transport) -> Result<Redlock, String> {
    let engine = builder.build().await.map_err(|e| e.to_string())?;
    let (up, all) = (engine.connected_nodes(), engine.node_count());
    if up < all {
        return Err(format!(
            "only {up} of {all} nodes connected ({transport:?} transport)"
        ));
    }
    Ok(engine)
}

/// Sets the engine's waiting features for `waiting`: the defaults (smart) or all off (plain).
pub fn with_waiting(builder: Builder, waiting: Waiting) -> Builder {
    let defaults = redlock_engine::Config::default();
    let (queue, notify, handoffs) = match waiting {
        Waiting::Smart => (
            defaults.local_queue,
            defaults.notify_releases,
            defaults.max_local_handoffs,
        ),
        Waiting::Plain => (false, false, 0),
    };
    builder
        .local_queue(queue)
        .notify_releases(notify)
        // `LOADGEN_MAX_LOCAL_HANDOFFS=N`: another bound, for experiments (inherited like the next).
        .max_local_handoffs(
            std::env::var("LOADGEN_MAX_LOCAL_HANDOFFS")
                .ok()
                .and_then(|n| n.parse().ok())
                .filter(|_| waiting == Waiting::Smart)
                .unwrap_or(handoffs),
        )
        // The engine's cross-process hand-off (on by default): `LOADGEN_CROSS_PROCESS_HANDOFF=0`
        // turns it off for A/B runs; inherited by the worker processes of a `--processes` run.
        .cross_process_handoff(
            waiting == Waiting::Smart
                && defaults.cross_process_handoff
                && std::env::var_os("LOADGEN_CROSS_PROCESS_HANDOFF").is_none_or(|v| v != "0"),
        )
}

impl LockClient for RedlockClient {
    type Held = Lock;

    async fn acquire(&self, resource: &[u8]) -> Acquired<Lock> {
        let (e, ttl) = (&self.engine, self.ttl);
        // The engine's own acquire, not the request (`redlock.lock(r)`, which the per-kind methods
        // are deprecated in favour of): the request boxes its future per call, measured at ~5% of
        // the cycles/s of 64 workers on this 2-core machine (results/2026-12-05/second-day/), and
        // loadgen's series measures the engine. Configured wait: retries, then a failure counted.
        #[allow(deprecated)]
        let result = match self.lock {
            LockKind::Exclusive => e.acquire(resource, ttl).await,
            LockKind::Fair => e.acquire_fair(resource, ttl).await,
            LockKind::Permits(k) => e.acquire_permit(resource, k, ttl).await,
            LockKind::Slots(k) => e.acquire_slot(resource, k, ttl).await,
        }
        .map_err(|e| cause(&e));
        let attempts = result.as_ref().ok().map(Lock::attempts);
        Acquired { result, attempts }
    }

    async fn release(&self, lock: Lock) -> Result<(), &'static str> {
        self.engine.release(lock).await.map_err(|e| cause(&e))
    }
}

/// The cause name of a [`LockError`] (see [`super::cause::of`]): the key under which failures are counted.
pub fn cause(err: &LockError) -> &'static str {
    super::cause::of(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_modes_set_the_engine_features() {
        let b = with_waiting(Redlock::builder(), Waiting::Plain);
        let c = b.config();
        assert_eq!(
            (c.local_queue, c.notify_releases, c.max_local_handoffs),
            (false, false, 0)
        );
        let b = with_waiting(b, Waiting::Smart);
        let c = b.config();
        let d = redlock_engine::Config::default();
        assert_eq!(
            (c.local_queue, c.notify_releases, c.max_local_handoffs),
            (d.local_queue, d.notify_releases, d.max_local_handoffs)
        );
        assert!(c.local_queue && c.notify_releases && c.max_local_handoffs > 0);
    }
}
