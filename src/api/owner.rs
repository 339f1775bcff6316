//! Reentrancy, scoped to an owner: the owner that holds a resource may acquire it again (a hold count
//! goes up); another owner — also in the same process — contends like any other client.
//!
//! Redlock values are per acquisition, so "who holds it" must be tracked somewhere; here it is the
//! [`LockOwner`] handle. Share one owner (in an `Arc`) between the parts of a task tree that should
//! count as one holder; create separate owners for holders that must exclude each other.

use super::guard::LockGuard;
use crate::algo::retry::Wait;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::engine::Redlock;
use crate::error::LockError;
use crate::lock::Lock;

/// A lock holder that can re-acquire what it holds. Created by [`Redlock::owner`]. Dropping it
/// releases every lock it still holds, as a dropped [`LockGuard`] does.
#[derive(Debug)]
pub struct LockOwner {
    engine: Redlock,
    /// One slot per resource this owner holds or is acquiring. The map lock is held only to find a
    /// slot; the slot's own (async) lock is held across round trips, so a slow acquire of one resource
    /// never holds up this owner's work on another — in particular a release that another owner is
    /// waiting for.
    slots: std::sync::Mutex<HashMap<Vec<u8>, Slot>>,
}

type Slot = Arc<Mutex<Option<Held>>>;

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
            slots: std::sync::Mutex::new(HashMap::new()),
        }
    }
}

impl LockOwner {
    /// Acquires `resource`, or re-enters it if this owner holds it; returns the hold count.
    ///
    /// Re-entering costs no round trip when the lock has at least `ttl` of validity left, and one extend
    /// otherwise. Calls for one resource by one owner run one at a time; other resources are not held up.
    ///
    /// # Errors
    /// As [`Redlock::acquire`] for the first hold. Re-entering a hold whose validity has ended gives
    /// [`LockError::AlreadyExpired`]: the outer holds were lost, and must be released (counted down) first.
    pub async fn acquire(
        &self,
        resource: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<u32, LockError> {
        let resource = resource.as_ref();
        let ttl = self.engine.core().check_ttl(ttl)?;
        let slot = self.slot(resource, true).expect("created on demand");
        let mut held = slot.lock().await;
        let result = match held.as_mut() {
            Some(entry) if !entry.lock.is_valid() => Err(LockError::AlreadyExpired),
            Some(entry) => {
                if entry.lock.remaining() < ttl {
                    self.engine.extend(&mut entry.lock, ttl).await?;
                }
                entry.count += 1;
                Ok(entry.count)
            }
            None => match self
                .engine
                .lock(resource)
                .ttl(ttl)
                .wait(Wait::Configured)
                .await
                .map(LockGuard::into_lock)
            {
                Ok(lock) => {
                    *held = Some(Held { lock, count: 1 });
                    Ok(1)
                }
                Err(e) => Err(e),
            },
        };
        drop(held);
        self.forget_if_empty(resource, &slot);
        result
    }

    /// Counts one hold down; at zero releases the lock on the nodes. Returns the holds left.
    ///
    /// # Errors
    /// [`LockError::InvalidInput`] if this owner does not hold `resource`; the release's errors at zero
    /// (the hold is forgotten either way).
    pub async fn release(&self, resource: impl AsRef<[u8]>) -> Result<u32, LockError> {
        let resource = resource.as_ref();
        let not_held = || LockError::InvalidInput("this owner does not hold the resource".into());
        let slot = self.slot(resource, false).ok_or_else(not_held)?;
        let mut held = slot.lock().await;
        let Some(entry) = held.as_mut() else {
            drop(held);
            self.forget_if_empty(resource, &slot);
            return Err(not_held());
        };
        entry.count -= 1;
        if entry.count > 0 {
            return Ok(entry.count);
        }
        let Held { lock, .. } = held.take().expect("checked above");
        // The slot is empty now: a concurrent acquire of this resource may go ahead while we release.
        drop(held);
        self.forget_if_empty(resource, &slot);
        self.engine.release(lock).await.map(|()| 0)
    }

    /// How many times this owner holds `resource` (0 if not).
    pub async fn holds(&self, resource: impl AsRef<[u8]>) -> u32 {
        match self.slot(resource.as_ref(), false) {
            Some(slot) => slot.lock().await.as_ref().map_or(0, |h| h.count),
            None => 0,
        }
    }

    /// The end of validity of this owner's hold on `resource`.
    pub async fn valid_until(&self, resource: impl AsRef<[u8]>) -> Option<Instant> {
        let slot = self.slot(resource.as_ref(), false)?;
        let held = slot.lock().await;
        held.as_ref().map(|h| h.lock.valid_until())
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The slot of `resource`, created if `create`.
    fn slot(&self, resource: &[u8], create: bool) -> Option<Slot> {
        let mut slots = self.slots();
        match slots.get(resource) {
            Some(slot) => Some(slot.clone()),
            None if create => {
                let slot = Slot::default();
                slots.insert(resource.to_vec(), slot.clone());
                Some(slot)
            }
            None => None,
        }
    }

    /// Drops an empty slot from the map, unless another call still has it (it will find it empty and
    /// either fill it or drop it in turn).
    fn forget_if_empty(&self, resource: &[u8], slot: &Slot) {
        let mut slots = self.slots();
        let ours = slots.get(resource).is_some_and(|s| Arc::ptr_eq(s, slot));
        // Two references: the map's and the caller's.
        if ours && Arc::strong_count(slot) == 2 && slot.try_lock().is_ok_and(|h| h.is_none()) {
            slots.remove(resource);
        }
    }
}

impl Drop for LockOwner {
    /// Every lock the owner still holds, whatever its count, is released as a dropped guard's is:
    /// queued on every node now, without a runtime.
    fn drop(&mut self) {
        let slots = std::mem::take(&mut *self.slots());
        let core = self.engine.core();
        for slot in slots.into_values() {
            // No call of this owner is running (each borrows it), so no slot is locked.
            if let Some(held) = slot.try_lock().ok().and_then(|mut h| h.take()) {
                core.release_on_drop(held.lock);
            }
        }
        if std::thread::panicking() {
            core.flush_now(crate::engine::shutdown::PANIC_FLUSH_BOUND);
        }
    }
}
