//! [`LockGuard`]: a held lock that releases itself when dropped — what a [`crate::LockRequest`]
//! gives. It derefs to the [`Lock`], so every accessor of a plain lock is there.
//!
//! Dropping it queues the owner-checked release on every node at once, without waiting and without
//! a runtime (the engine's connections take the commands synchronously; copies that do not land are
//! re-sent in the background until the keys' TTL): never blocking, safe in `Drop`. The connections'
//! writers are tasks of the runtime, so two drops write the queued releases to the sockets
//! themselves, from the dropping thread: a guard dropped while its thread panics (a panic out of
//! `main` ends the runtime next), and the engine's last handle (`main`'s end, after its guards).
//! What remains uncovered: a guard dropped as its runtime shuts down while the engine lives on
//! elsewhere (a `static`), and TLS or fred connections, which cannot be written without the
//! runtime; such a lock expires at its TTL. [`LockGuard::release`] is the awaited form, with its
//! result and the local hand-off to a waiting task of this process.

use std::fmt;
use std::ops::Deref;
use std::time::Duration;

use super::renewed::{RenewPolicy, RenewedLock};
use crate::engine::Redlock;
use crate::error::LockError;
use crate::lock::Lock;

/// A lock held until this guard is released or dropped. Derefs to the [`Lock`].
///
/// ```no_run
/// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
/// use std::time::Duration;
/// let guard = redlock.lock("orders:42").ttl(Duration::from_secs(10)).await?;
/// assert!(guard.is_valid());
/// // ... the work the lock protects ...
/// guard.release().await?; // or let it drop: released in the background
/// # Ok(()) }
/// ```
///
/// A guard (and a plain [`Lock`], and a request) must be used: left unbound it would release at
/// once, so the compiler says so.
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
///     redlock.lock("orders:42").await?; // the guard is dropped here: error
///     Ok(())
/// }
/// ```
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
///     redlock.acquire("orders:42", std::time::Duration::from_secs(5)).await?; // error
///     Ok(())
/// }
/// ```
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// fn build(redlock: &redlock_engine::Redlock) {
///     redlock.lock("orders:42").fair(); // a request never awaited: error
/// }
/// ```
///
/// The same bindings compile (the control for the three above):
///
/// ```
/// #![deny(unused_must_use)]
/// async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
///     let _guard = redlock.lock("orders:42").await?;
///     let lock = redlock.acquire("orders:43", std::time::Duration::from_secs(5)).await?;
///     redlock.release(lock).await
/// }
/// ```
#[must_use = "dropping the guard releases the lock at once"]
pub struct LockGuard {
    engine: Redlock,
    /// `None` only after it was released, kept or renewed (never while the guard is usable).
    lock: Option<Lock>,
}

impl LockGuard {
    pub(crate) fn new(engine: Redlock, lock: Lock) -> Self {
        Self {
            engine,
            lock: Some(lock),
        }
    }

    fn take(&mut self) -> Lock {
        self.lock
            .take()
            .expect("a guard holds its lock until consumed")
    }

    /// Releases the lock on every node (or hands it to a task of this process waiting for it) and
    /// says how it went.
    ///
    /// # Errors
    /// As [`Redlock::release`]: [`LockError::NotOwner`], [`LockError::AlreadyExpired`],
    /// [`LockError::QuorumNotReached`] (copies are re-sent in the background), [`LockError::Overloaded`].
    pub async fn release(mut self) -> Result<(), LockError> {
        let lock = self.take();
        self.engine.release(lock).await
    }

    /// Extends the lock to `ttl` from now (see [`Redlock::extend`]).
    ///
    /// # Errors
    /// As [`Redlock::extend`].
    pub async fn extend(&mut self, ttl: Duration) -> Result<(), LockError> {
        let lock = self
            .lock
            .as_mut()
            .expect("a guard holds its lock until consumed");
        self.engine.extend(lock, ttl).await
    }

    /// Asks every node whether the lock is still held (redsync's `Valid`), changing nothing:
    /// `true` when its quorum confirms it within its validity; `false` when it is not valid any
    /// more or the answers rule it out (a forced release, an evicted or expired key, another
    /// owner's value, a failed-over node that lost it). After `false`,
    /// [`is_valid`](Lock::is_valid) stays false and [`lost`](Self::lost) completes.
    ///
    /// # Errors
    /// [`LockError::QuorumNotReached`]: too few nodes answered to tell.
    pub async fn is_held(&self) -> Result<bool, LockError> {
        self.engine.core().is_held(self).await
    }

    /// Completes when the lock is lost, and says why: [`LockError::Lost`] when its validity ended
    /// or nodes of its quorum had their clocks jump forward, [`LockError::NotOwner`] when a check
    /// ([`is_held`](Self::is_held)) found it gone, [`LockError::Closed`] when the engine was shut
    /// down. Select on it beside the work the lock protects. It learns from the nodes only when they
    /// are asked; a lock that must outlive its TTL is [`renew`](Self::renew)ed, whose `lost` also
    /// covers failed renewals.
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// let guard = redlock.lock("report:7").await?;
    /// tokio::select! {
    ///     why = guard.lost() => eprintln!("stopped: {why}"),
    ///     _ = tokio::time::sleep(std::time::Duration::from_secs(5)) => guard.release().await?,
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn lost(&self) -> LockError {
        self.engine.core().lost(self).await
    }

    /// Hands the lock to the watchdog, which renews it until it is released or dropped.
    ///
    /// # Errors
    /// [`LockError::InvalidInput`] if `policy.every` is not below the lock's TTL (the lock is then
    /// released in the background).
    pub fn renew(mut self, policy: RenewPolicy) -> Result<RenewedLock, LockError> {
        let lock = self.take();
        self.engine.renew(lock, policy)
    }

    /// The lock, no longer released on drop: release it with [`Redlock::release`], or it stays held
    /// until its TTL ends.
    pub fn into_lock(mut self) -> Lock {
        self.take()
    }
}

impl Deref for LockGuard {
    type Target = Lock;

    fn deref(&self) -> &Lock {
        self.lock
            .as_ref()
            .expect("a guard holds its lock until consumed")
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            metrics::counter!("redlock_guard_drop_releases_total").increment(1);
            let core = self.engine.core();
            core.release_on_drop(lock);
            if std::thread::panicking() {
                // Unwinding, maybe out of `main` and its runtime: the connections' writers may not
                // run again, so the release is written to the sockets here.
                core.flush_now(crate::engine::shutdown::PANIC_FLUSH_BOUND);
            }
        }
    }
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.lock {
            Some(lock) => f.debug_tuple("LockGuard").field(lock).finish(),
            None => f.write_str("LockGuard(released)"),
        }
    }
}
