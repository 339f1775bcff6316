//! Renewed locks: locks that extend themselves while their holder works — [`RenewPolicy`] and
//! [`RenewedLock`]; each lock's record is `crate::watchdog::entry`, the task that renews them
//! `crate::watchdog::task`.
//!
//! A lock is declared lost when its validity ends unrenewed, or when a renewal round shows a
//! majority can no longer be won (enough nodes say the key is gone or someone else's): then the
//! holder's [`CancellationToken`] fires at once and the lock never keeps running as if held. A round
//! that only failed (timeouts, disconnects, overload) is retried while validity remains.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::algo::retry::Wait;
use crate::engine::holds::{Answer, HeldCheck};
use crate::engine::Redlock;
use crate::error::LockError;
use crate::lock::Lock;
use crate::watchdog::entry::{next_renewal, Entry};

/// How a renewed lock renews. `Default`: every third of the TTL, no cap.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RenewPolicy {
    /// Time between renewals. `None`: a third of the TTL. Must be below the TTL.
    pub every: Option<Duration>,
    /// Stop renewing once the lock has been held this long (it then expires at its TTL). Default: none.
    pub max_lifetime: Option<Duration>,
    /// Stop renewing after this many renewals. Default: none.
    pub max_renewals: Option<u32>,
}

impl RenewPolicy {
    /// Renew every `every` instead of every third of the TTL.
    pub fn every(mut self, every: Duration) -> Self {
        self.every = Some(every);
        self
    }

    /// Cap the total time the lock is kept alive.
    pub fn max_lifetime(mut self, max: Duration) -> Self {
        self.max_lifetime = Some(max);
        self
    }

    /// Cap the number of renewals.
    pub fn max_renewals(mut self, max: u32) -> Self {
        self.max_renewals = Some(max);
        self
    }
}

/// A lock kept alive by the engine's watchdog until released or dropped.
///
/// Select on [`lost`](Self::lost) (or hand [`lost_token`](Self::lost_token) to the work) to stop as soon
/// as the lock is no longer held. Dropping it stops renewal and releases the lock in the background.
#[derive(Debug)]
#[must_use = "dropping a RenewedLock stops renewing and releases it at once"]
pub struct RenewedLock {
    engine: Redlock,
    entry: Arc<Entry>,
}

impl Redlock {
    /// Acquires `resource` (retrying like [`acquire`](Self::acquire)) and keeps it alive with the
    /// watchdog until the returned lock is released or dropped.
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// use std::time::Duration;
    /// use redlock_engine::RenewPolicy;
    /// let lock = redlock.acquire_renewed(b"job:7", Duration::from_secs(3), RenewPolicy::default()).await?;
    /// tokio::select! {
    ///     _ = lock.lost() => { /* stop: someone else may hold it now */ }
    ///     _ = tokio::time::sleep(Duration::from_secs(10)) => { /* long work, renewed every second */ }
    /// }
    /// lock.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// Cost: the acquire, then one extend round trip per renewal, batched per node with every other
    /// renewal due at the same tick.
    #[deprecated(
        since = "0.2.0",
        note = "use `redlock.lock(resource).ttl(ttl).renewed(policy)`"
    )]
    pub async fn acquire_renewed(
        &self,
        resource: impl AsRef<[u8]>,
        ttl: Duration,
        policy: RenewPolicy,
    ) -> Result<RenewedLock, LockError> {
        self.lock(resource)
            .ttl(ttl)
            .wait(Wait::Configured)
            .renewed(policy)
            .await
    }

    /// Hands an acquired lock of any kind (multi-resource, read, write) to the watchdog.
    ///
    /// # Errors
    /// [`LockError::InvalidInput`] if `policy.every` is not below the lock's TTL, or if called outside
    /// a tokio runtime (the watchdog is a task); the lock is then released in the background.
    pub fn renew(&self, lock: Lock, policy: RenewPolicy) -> Result<RenewedLock, LockError> {
        let core = self.core();
        let every = match self.check_policy(&policy, lock.ttl()) {
            Ok(every) => every,
            Err(refused) => {
                core.release_on_drop(lock);
                return Err(refused);
            }
        };
        // The watchdog is a task: without a runtime nothing would renew the lock.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            core.release_on_drop(lock);
            return Err(LockError::InvalidInput(
                "renewal needs a tokio runtime to run on (called outside one); the lock was \
                 released"
                    .into(),
            ));
        };
        let now = Instant::now();
        let first = next_renewal(
            now,
            every,
            lock.valid_until(),
            core.round_timeout(lock.ttl()),
        );
        // Spread: locks taken in one burst would otherwise all renew in the same instant forever.
        let spread = every.mul_f64(0.25 * fastrand::f64());
        let first_at = first.checked_sub(spread).unwrap_or(first).max(now);
        // A lifetime too long to represent is no cap at all.
        let stop_renewing_at = policy.max_lifetime.and_then(|max| now.checked_add(max));
        let entry = Arc::new(Entry::new(
            lock,
            every,
            stop_renewing_at,
            policy.max_renewals,
            first_at,
        ));
        if core.watchdog().register(Arc::downgrade(&entry), first_at) {
            runtime.spawn(crate::watchdog::task::run(
                Arc::downgrade(core),
                core.watchdog().wake_handle(),
            ));
        }
        Ok(RenewedLock {
            engine: self.clone(),
            entry,
        })
    }
}

impl Redlock {
    /// The renewal interval for `ttl`; it must leave room for a renewal round before validity ends.
    pub(crate) fn check_policy(
        &self,
        policy: &RenewPolicy,
        ttl: Duration,
    ) -> Result<Duration, LockError> {
        let timing = &self.core().settings().timing;
        let every = policy.every.unwrap_or(ttl / 3);
        let room = ttl.saturating_sub(timing.drift(ttl));
        if every.is_zero() || every.saturating_add(timing.node_timeout(ttl)) >= room {
            return Err(LockError::InvalidInput(format!(
                "renewal interval {every:?} must be above zero and leave a node timeout before the \
                 validity of a {ttl:?} lock ends"
            )));
        }
        Ok(every)
    }
}

impl RenewedLock {
    /// Completes when the lock is lost: a renewal failed, or its validity ended (also if the watchdog
    /// could not run in time).
    pub async fn lost(&self) {
        self.entry.lost().await
    }

    /// A token cancelled when the lock is lost, to hand to the work it protects.
    pub fn lost_token(&self) -> CancellationToken {
        self.entry.lost.child_token()
    }

    /// Asks every node whether the lock is still held, as [`crate::LockGuard::is_held`]; a "no"
    /// declares it lost at once ([`lost`](Self::lost) completes), as a failed renewal would.
    ///
    /// # Errors
    /// [`LockError::QuorumNotReached`]: too few nodes answered to tell.
    pub async fn is_held(&self) -> Result<bool, LockError> {
        let core = self.engine.core();
        // A check that outlived the validity it started with asks again with the current one (a
        // renewal may have moved it), once: the watchdog decides a lock that really ran out.
        for _ in 0..2 {
            let Some(check) = self.read(|l| HeldCheck::of(l, core.nodes().len())) else {
                return Ok(false);
            };
            if self.is_lost() {
                return Ok(false);
            }
            match core.ask_held(check).await? {
                Answer::Held => return Ok(!self.is_lost()),
                Answer::Expired => continue,
                Answer::Refused => {
                    let st = self.entry.lock();
                    self.entry.declare_lost(&st, "gone");
                    return Ok(false);
                }
            }
        }
        Ok(false)
    }

    /// Whether the lock has been lost.
    pub fn is_lost(&self) -> bool {
        self.entry.is_lost()
    }

    /// The current end of validity (moves forward with every renewal).
    pub fn valid_until(&self) -> Instant {
        self.entry.valid_until()
    }

    pub(crate) fn entry(&self) -> Arc<Entry> {
        self.entry.clone()
    }

    /// Validity left now; zero once lost or expired.
    pub fn remaining(&self) -> Duration {
        self.valid_until().saturating_duration_since(Instant::now())
    }

    /// Renewals done so far.
    pub fn renewals(&self) -> u32 {
        self.entry.renewals()
    }

    /// Reads the lock under the entry's lock (`None` once released).
    fn read<T>(&self, f: impl FnOnce(&Lock) -> T) -> Option<T> {
        self.entry.lock().lock.as_ref().map(f)
    }

    /// The resource this lock holds (the first of a multi-resource lock), as [`Lock::resource`].
    pub fn resource(&self) -> Vec<u8> {
        self.read(|l| l.resource().to_vec()).unwrap_or_default()
    }

    /// The fencing token of a fenced lock, as [`Lock::fencing_token`].
    pub fn fencing_token(&self) -> Option<u64> {
        self.read(Lock::fencing_token).flatten()
    }

    /// Whether this is a reader's hold, as [`Lock::is_read`].
    pub fn is_read(&self) -> bool {
        self.read(Lock::is_read).unwrap_or(false)
    }

    /// The TTL the keys were last set with, as [`Lock::ttl`].
    pub fn ttl(&self) -> Duration {
        self.read(Lock::ttl).unwrap_or_default()
    }

    /// Attempts the acquire made, as [`Lock::attempts`].
    pub fn attempts(&self) -> u32 {
        self.read(Lock::attempts).unwrap_or(0)
    }

    /// Whether the lock is still held: not lost, validity left (as [`Lock::is_valid`]).
    pub fn is_valid(&self) -> bool {
        !self.is_lost() && self.read(Lock::is_valid).unwrap_or(false)
    }

    /// A token cancelled when the lock is lost (the same as [`lost_token`](Self::lost_token); the
    /// name [`crate::LockContext::token`] has).
    pub fn token(&self) -> CancellationToken {
        self.lost_token()
    }

    /// Stops renewal and releases the lock on every node (also after it was lost: what is left of it
    /// is cleaned up).
    ///
    /// # Errors
    /// As [`Redlock::release`]: after a loss, typically [`LockError::NotOwner`] or
    /// [`LockError::AlreadyExpired`].
    pub async fn release(self) -> Result<(), LockError> {
        // The watchdog forgets the entry when it next comes up (no wake-up: 100,000 releases must
        // not mean 100,000 scans).
        let lock = self.entry.take();
        match lock {
            Some(lock) => self.engine.release(lock).await,
            None => Err(LockError::AlreadyExpired),
        }
    }
}

impl Drop for RenewedLock {
    fn drop(&mut self) {
        if let Some(lock) = self.entry.take() {
            // As a guard's drop: queued on every node now, without a runtime, and written to the
            // sockets here when the thread is panicking (its runtime may not run again).
            let core = self.engine.core();
            core.release_on_drop(lock);
            if std::thread::panicking() {
                core.flush_now(crate::engine::shutdown::PANIC_FLUSH_BOUND);
            }
        }
    }
}
