//! `rslock`: the published `rslock` crate (redis-rs multiplexed connections), the peer to beat.
//!
//! rslock's own loop (`LockManager::lock`, 0.10) is: one attempt (SET NX PX on every node, awaited; on a
//! lost attempt the unlock script on every node, awaited), then, while attempts are left, a pause drawn
//! uniformly from `[0, retry_delay)` whole milliseconds on `futures-timer`. It exposes no attempt count,
//! so the manager is set to one attempt per `lock()` call and that loop is replayed here with the same
//! pause distribution and the same timer.
//!
//! What differs from the other engines' retry policy, as far as its API allows:
//! - attempts: rslock's `retry_count` counts all attempts, so it gets `retries + 1` — the same number;
//! - pause: rslock has no base delay, only `uniform[0, D)` ms. `D = 2*delay + jitter` gives the same
//!   mean pause as `delay + uniform[0, jitter]` (75 ms for the defaults), over a wider range [0, 150) ms;
//! - no per-node timeout (redis-rs waits for each reply), no minimum-validity rule.

use std::time::Duration;

use rslock::{Lock, LockError, LockManager};

use super::{lock_key, Acquired, LockClient, RetrySpec};

/// An rslock manager plus the workload's TTL and retry policy.
#[derive(Debug)]
pub struct RslockClient {
    manager: LockManager,
    ttl: Duration,
    retries: u32,
    /// rslock's `retry_delay` in whole ms (at least 1: rslock draws from `0..delay`).
    pause_ms: u64,
}

impl RslockClient {
    /// Creates the manager and makes one lock cycle to open its connections.
    pub async fn connect(urls: &[String], ttl: Duration, retry: RetrySpec) -> Result<Self, String> {
        let mut manager = LockManager::new(urls.to_vec());
        let pause_ms = pause_ms(retry);
        manager.set_retry(1, Duration::from_millis(pause_ms));
        let client = Self {
            manager,
            ttl,
            retries: retry.retries,
            pause_ms,
        };
        // A key of its own: the processes of a --processes run connect at the same time.
        let key = format!(
            "redlock:loadgen:probe:{}:{}",
            std::process::id(),
            fastrand::u64(..)
        );
        let probe = tokio::time::timeout(
            Duration::from_secs(5),
            client.manager.lock(key.as_bytes(), ttl),
        );
        match probe.await {
            Ok(Ok(lock)) => client.manager.unlock(&lock).await,
            Ok(Err(e)) => return Err(format!("rslock could not lock a probe key: {e}")),
            Err(_) => return Err("rslock did not answer within 5s".into()),
        }
        Ok(client)
    }

    /// The manager, for what the lock-client trait does not cover (the held scenario's `extend`).
    pub fn manager(&self) -> &LockManager {
        &self.manager
    }

    /// What the report says about rslock's retry settings.
    pub fn describe(retry: RetrySpec) -> String {
        format!(
            "rslock: retry_count {} (all attempts), pause uniform [0, {}) ms (no base delay; same mean as ours)",
            retry.retries + 1,
            pause_ms(retry)
        )
    }
}

/// `2*delay + jitter` in whole milliseconds, at least 1.
fn pause_ms(retry: RetrySpec) -> u64 {
    let d = retry.delay.saturating_mul(2).saturating_add(retry.jitter);
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl LockClient for RslockClient {
    type Held = Lock;

    async fn acquire(&self, resource: &[u8]) -> Acquired<Lock> {
        let key = lock_key(resource);
        let mut attempts = 0;
        loop {
            attempts += 1;
            match self.manager.lock(&key, self.ttl).await {
                Ok(lock) => {
                    return Acquired {
                        result: Ok(lock),
                        attempts: Some(attempts),
                    }
                }
                // rslock retries a lost round (Unavailable) and returns anything else at once.
                Err(LockError::Unavailable) if attempts <= self.retries => {
                    futures_timer::Delay::new(Duration::from_millis(fastrand::u64(
                        0..self.pause_ms,
                    )))
                    .await;
                }
                Err(err) => {
                    return Acquired {
                        result: Err(cause(&err)),
                        attempts: Some(attempts),
                    }
                }
            }
        }
    }

    async fn release(&self, lock: Lock) -> Result<(), &'static str> {
        // rslock's unlock reports nothing.
        self.manager.unlock(&lock).await;
        Ok(())
    }
}

fn cause(err: &LockError) -> &'static str {
    match err {
        LockError::Io(_) => "Io",
        LockError::Redis(_) => "Redis",
        LockError::Unavailable => "Unavailable",
        LockError::TtlExceeded => "TtlExceeded",
        LockError::TtlTooLarge => "TtlTooLarge",
        LockError::RedisConnectionFailed => "RedisConnectionFailed",
        LockError::RedisFailedToEstablishConnection => "RedisFailedToEstablishConnection",
        LockError::RedisKeyMismatch => "RedisKeyMismatch",
        LockError::RedisKeyNotFound => "RedisKeyNotFound",
        LockError::MutexPoisoned => "MutexPoisoned",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_mean_pause() {
        let r = RetrySpec {
            retries: 10,
            delay: Duration::from_millis(50),
            jitter: Duration::from_millis(50),
        };
        assert_eq!(pause_ms(r), 150);
        let zero = RetrySpec {
            retries: 0,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
        };
        assert_eq!(pause_ms(zero), 1);
    }
}
