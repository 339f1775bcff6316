//! `raw`: the lock's Redis command stream without the lock algorithm — the overhead floor.
//!
//! One attempt is `SET key value NX PX ttl` on every node over the engine's own pipelined transport,
//! waiting for every reply (no early decision, no validity check); release is the compare-and-delete
//! script on every node. A round that did not win a majority releases its key and pauses like the engine
//! does, so under contention the stream stays comparable; it is meant for the uncontended scenarios.

use std::time::Duration;

use bytes::Bytes;
use redlock_engine::__private::{release_all, set_all, LockValue, RetryPolicy};
use redlock_engine::{Redlock, Transport};

use super::{lock_key, Acquired, LockClient, RetrySpec, Waiting};

/// The engine's transport, used without the algorithm.
#[derive(Debug)]
pub struct RawClient {
    engine: Redlock,
    ttl_ms: u64,
    /// Per-round reply deadline: the engine's node timeout for this TTL (5 %, at most 50 ms).
    timeout: Duration,
    quorum: usize,
    retries: u32,
    policy: RetryPolicy,
}

/// A key set on a majority, with the value that owns it.
#[derive(Debug)]
pub struct RawHeld {
    key: Bytes,
    value: LockValue,
}

impl RawClient {
    /// Connects the pipelined transport to every node.
    pub async fn connect(urls: &[String], ttl: Duration, retry: RetrySpec) -> Result<Self, String> {
        // Only the transport is used: no acquire, so no waiting features.
        let engine =
            super::redlock::build(urls, Transport::Pipeline, retry, Waiting::Plain).await?;
        let quorum = engine.node_count() / 2 + 1;
        let timeout = (ttl / 20)
            .min(Duration::from_millis(50))
            .max(Duration::from_micros(100));
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let policy = RetryPolicy::new(retry.retries, retry.delay, retry.jitter);
        Ok(Self {
            engine,
            ttl_ms,
            timeout,
            quorum,
            retries: retry.retries,
            policy,
        })
    }
}

impl LockClient for RawClient {
    type Held = RawHeld;

    async fn acquire(&self, resource: &[u8]) -> Acquired<RawHeld> {
        let key = Bytes::from(lock_key(resource));
        let mut attempts = 0;
        loop {
            attempts += 1;
            let Ok(value) = LockValue::random() else {
                return Acquired {
                    result: Err("Random"),
                    attempts: Some(attempts),
                };
            };
            if set_all(&self.engine, &key, value, self.ttl_ms, self.timeout).await >= self.quorum {
                return Acquired {
                    result: Ok(RawHeld { key, value }),
                    attempts: Some(attempts),
                };
            }
            release_all(&self.engine, &key, value, self.timeout).await;
            if attempts > self.retries {
                return Acquired {
                    result: Err("Contended"),
                    attempts: Some(attempts),
                };
            }
            tokio::time::sleep(self.policy.next_delay()).await;
        }
    }

    async fn release(&self, held: RawHeld) -> Result<(), &'static str> {
        if release_all(&self.engine, &held.key, held.value, self.timeout).await >= self.quorum {
            Ok(())
        } else {
            Err("NoMajority")
        }
    }
}
