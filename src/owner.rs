//! Reentrancy, scoped to an owner: the owner that holds a resource may acquire it again (a hold count
//! goes up); another owner — also in the same process — contends like any other client.
//!
//! Redlock values are per acquisition, so "who holds it" must be tracked somewhere; here it is the
//! [`LockOwner`] handle. Share one owner (in an `Arc`) between the parts of a task tree that should
//! count as one holder; create separate owners for holders that must exclude each other.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::error::LockError;
use crate::lock::Lock;
use crate::Redlock;

/// A lock holder that can re-acquire what it holds. Created by [`Redlock::owner`].
#[derive(Debug)]
pub struct LockOwner {
    engine: Redlock,
    held: Mutex<HashMap<Vec<u8>, Held>>,
}

#[derive(Debug)]
struct Held {
    lock: Lock,
    count: u32,
}

impl Redlock {
    /// A new owner for reentrant acquisitions.
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// use std::time::Duration;
    /// let owner = redlock.owner();
    /// assert_eq!(owner.acquire(b"tree", Duration::from_secs(5)).await?, 1);
    /// assert_eq!(owner.acquire(b"tree", Duration::from_secs(5)).await?, 2); // re-entered, no round trip
    /// assert_eq!(owner.release(b"tree").await?, 1);
    /// assert_eq!(owner.release(b"tree").await?, 0); // released on the nodes
    /// # Ok(()) }
    /// ```
    pub fn owner(&self) -> LockOwner {
        LockOwner {
            engine: self.clone(),
            held: Mutex::new(HashMap::new()),
        }
    }
}

impl LockOwner {
    /// Acquires `resource`, or re-enters it if this owner holds it; returns the hold count.
    ///
    /// Re-entering costs no round trip when the lock has at least `ttl` of validity left, and one extend
    /// otherwise.
    ///
    /// # Errors
    /// As [`Redlock::acquire`] for the first hold. Re-entering a hold whose validity has ended gives
    /// [`LockError::AlreadyExpired`]: the outer holds were lost, and must be released (counted down) first.
    pub async fn acquire(&self, resource: &[u8], ttl: Duration) -> Result<u32, LockError> {
        let ttl = self.engine.check_ttl(ttl)?;
        let mut held = self.held.lock().await;
        if let Some(entry) = held.get_mut(resource) {
            if !entry.lock.is_valid() {
                return Err(LockError::AlreadyExpired);
            }
            if entry.lock.remaining() < ttl {
                self.engine.extend(&mut entry.lock, ttl).await?;
            }
            entry.count += 1;
            return Ok(entry.count);
        }
        let lock = self.engine.acquire(resource, ttl).await?;
        held.insert(resource.to_vec(), Held { lock, count: 1 });
        Ok(1)
    }

    /// Counts one hold down; at zero releases the lock on the nodes. Returns the holds left.
    ///
    /// # Errors
    /// [`LockError::InvalidInput`] if this owner does not hold `resource`; the release's errors at zero
    /// (the hold is forgotten either way).
    pub async fn release(&self, resource: &[u8]) -> Result<u32, LockError> {
        let mut held = self.held.lock().await;
        let Some(entry) = held.get_mut(resource) else {
            return Err(LockError::InvalidInput(
                "this owner does not hold the resource".into(),
            ));
        };
        entry.count -= 1;
        if entry.count > 0 {
            return Ok(entry.count);
        }
        let Held { lock, .. } = held.remove(resource).expect("entry exists");
        drop(held);
        self.engine.release(lock).await.map(|()| 0)
    }

    /// How many times this owner holds `resource` (0 if not).
    pub async fn holds(&self, resource: &[u8]) -> u32 {
        self.held.lock().await.get(resource).map_or(0, |h| h.count)
    }

    /// The end of validity of this owner's hold on `resource`.
    pub async fn valid_until(&self, resource: &[u8]) -> Option<Instant> {
        self.held
            .lock()
            .await
            .get(resource)
            .map(|h| h.lock.valid_until())
    }
}
