//! `redlock` and `redlock-fred`: this project's engine.
//!
//! The retry loop is `Redlock::acquire`'s, unrolled over `try_acquire` so attempts can be counted: retry
//! only retryable errors, at most `retries` more attempts, pause `delay + uniform(0, jitter)` between them
//! (the engine's own `RetryPolicy`).

use std::time::Duration;

use redlock_engine::__private::RetryPolicy;
use redlock_engine::{Lock, LockError, Redlock, Transport};

use super::{Acquired, LockClient, RetrySpec};

/// A connected engine plus the workload's TTL and retry policy.
#[derive(Debug)]
pub struct RedlockClient {
    engine: Redlock,
    ttl: Duration,
    retries: u32,
    policy: RetryPolicy,
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
        let policy = RetryPolicy::new(retry.retries, retry.delay, retry.jitter);
        Ok(Self {
            engine,
            ttl,
            retries: retry.retries,
            policy,
        })
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
        let mut attempts = 0;
        loop {
            attempts += 1;
            match self.engine.try_acquire(resource, self.ttl).await {
                Ok(lock) => {
                    return Acquired {
                        result: Ok(lock),
                        attempts,
                    }
                }
                Err(err) if err.is_retryable() && attempts <= self.retries => {
                    tokio::time::sleep(self.policy.next_delay()).await;
                }
                Err(err) => {
                    return Acquired {
                        result: Err(cause(&err)),
                        attempts,
                    }
                }
            }
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
