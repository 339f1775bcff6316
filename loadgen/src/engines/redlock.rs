//! `redlock` and `redlock-fred`: this project's engine, through its public `acquire`/`release`.
//!
//! `acquire` is called as is (its retry loop, in-process queueing and all), so what is measured is what a
//! user gets. The engine does not report how many attempts an acquire made, so `attempts` is unknown here.

use std::time::Duration;

use redlock_engine::{Lock, LockError, Redlock, Transport};

use super::{Acquired, LockClient, RetrySpec};

/// A connected engine plus the workload's TTL and retry policy.
#[derive(Debug)]
pub struct RedlockClient {
    engine: Redlock,
    ttl: Duration,
}

impl RedlockClient {
    /// Connects to every node over `transport`; fails unless every node is connected.
    pub async fn connect(
        urls: &[String],
        transport: Transport,
        ttl: Duration,
        retry: RetrySpec,
    ) -> Result<Self, String> {
        let engine = build(urls, transport, retry).await?;
        Ok(Self { engine, ttl })
    }
}

/// Builds an engine and checks that every node is connected.
pub async fn build(
    urls: &[String],
    transport: Transport,
    retry: RetrySpec,
) -> Result<Redlock, String> {
    let engine = Redlock::builder()
        .nodes(urls.iter().cloned())
        .transport(transport)
        .retry(retry.retries, retry.delay, retry.jitter)
        .connect_timeout(Duration::from_secs(2))
        // A load run measures the command stream, which quarantine does not change; and spawned nodes
        // are fresh, so with it on they would not vote for the first max_ttl.
        .quarantine(false)
        .build()
        .await
        .map_err(|e| e.to_string())?;
    let (up, all) = (engine.connected_nodes(), engine.node_count());
    if up < all {
        return Err(format!(
            "only {up} of {all} nodes connected ({transport:?} transport)"
        ));
    }
    Ok(engine)
}

impl LockClient for RedlockClient {
    type Held = Lock;

    async fn acquire(&self, resource: &[u8]) -> Acquired<Lock> {
        let result = self
            .engine
            .acquire(resource, self.ttl)
            .await
            .map_err(|e| cause(&e));
        Acquired {
            result,
            attempts: None,
        }
    }

    async fn release(&self, lock: Lock) -> Result<(), &'static str> {
        self.engine.release(lock).await.map_err(|e| cause(&e))
    }
}

/// The variant name of a [`LockError`]: the key under which failures are counted.
pub fn cause(err: &LockError) -> &'static str {
    match err {
        LockError::Contended { .. } => "Contended",
        LockError::QuorumNotReached { .. } => "QuorumNotReached",
        LockError::ValidityExpired { .. } => "ValidityExpired",
        LockError::NotOwner => "NotOwner",
        LockError::AlreadyExpired => "AlreadyExpired",
        LockError::Node { .. } => "Node",
        LockError::Timeout { .. } => "Timeout",
        LockError::Random(_) => "Random",
        LockError::InvalidConfig(_) => "InvalidConfig",
        LockError::InvalidInput(_) => "InvalidInput",
        _ => "Other",
    }
}
