//! Watchdog renewal: locks that extend themselves while their holder works.
//!
//! One watchdog task per engine serves every renewed lock. Each tick it extends **all** locks that are
//! due at once: every extend round queues its command on every node before any reply is awaited, so a
//! node's connection writes them in one batch — one pipeline per node per tick, not a timer and a round
//! trip per lock. A renewal that does not win a majority, or a lock whose validity ends (after the
//! renewal cap), fires the holder's [`CancellationToken`] at once and marks the lock lost: it never keeps
//! running as if held.

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::LockError;
use crate::fanout::fan_out;
use crate::lock::Lock;
use crate::observe::Op;
use crate::quorum::Vote;
use crate::redlock::millis;
use crate::transport::{Args, Cmd};
use crate::Redlock;

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
pub struct RenewedLock {
    engine: Redlock,
    entry: Arc<Entry>,
}

#[derive(Debug)]
pub(crate) struct Entry {
    state: Mutex<EntryState>,
    lost: CancellationToken,
    every: Duration,
    stop_renewing_at: Option<Instant>,
    max_renewals: Option<u32>,
}

#[derive(Debug)]
struct EntryState {
    /// `None` once released.
    lock: Option<Lock>,
    renewals: u32,
    next_renewal: Instant,
}

/// The engine's registry of renewed locks and its (lazily started) task.
#[derive(Debug, Default)]
pub(crate) struct Watchdog {
    registry: Mutex<Registry>,
    wake: Notify,
}

#[derive(Debug, Default)]
struct Registry {
    entries: Vec<Weak<Entry>>,
    /// Whether the task runs; changed only under this lock, so a registration never misses it.
    running: bool,
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
    pub async fn acquire_renewed(
        &self,
        resource: &[u8],
        ttl: Duration,
        policy: RenewPolicy,
    ) -> Result<RenewedLock, LockError> {
        self.check_policy(&policy, self.check_ttl(ttl)?)?;
        let lock = self.acquire(resource, ttl).await?;
        self.renew(lock, policy)
    }

    /// Hands an acquired lock of any kind (multi-resource, read, write) to the watchdog.
    ///
    /// # Errors
    /// [`LockError::InvalidInput`] if `policy.every` is not below the lock's TTL (nothing is released).
    pub fn renew(&self, lock: Lock, policy: RenewPolicy) -> Result<RenewedLock, LockError> {
        let every = self.check_policy(&policy, lock.ttl)?;
        let now = Instant::now();
        let first = next_renewal(
            now,
            every,
            lock.valid_until,
            self.settings().timing.node_timeout(lock.ttl),
        );
        let entry = Arc::new(Entry {
            lost: CancellationToken::new(),
            every,
            // A lifetime too long to represent is no cap at all.
            stop_renewing_at: policy.max_lifetime.and_then(|max| now.checked_add(max)),
            max_renewals: policy.max_renewals,
            state: Mutex::new(EntryState {
                lock: Some(lock),
                renewals: 0,
                next_renewal: first,
            }),
        });
        if self.watchdog().register(Arc::downgrade(&entry)) {
            tokio::spawn(run(self.downgrade()));
        }
        Ok(RenewedLock {
            engine: self.clone(),
            entry,
        })
    }
}

impl Redlock {
    /// The renewal interval for `ttl`; it must leave room for a renewal round before validity ends.
    fn check_policy(&self, policy: &RenewPolicy, ttl: Duration) -> Result<Duration, LockError> {
        let timing = &self.settings().timing;
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

/// When to renew next after a round started at `from`: one interval later, but never later than one
/// node timeout before the validity ends (a lock handed over with little validity left renews at once).
fn next_renewal(
    from: Instant,
    every: Duration,
    valid_until: Instant,
    node_timeout: Duration,
) -> Instant {
    let latest = valid_until.checked_sub(node_timeout).unwrap_or(valid_until);
    from.checked_add(every).map_or(latest, |at| at.min(latest))
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
        self.entry.lock().renewals
    }

    /// Stops renewal and releases the lock on every node (also after it was lost: what is left of it
    /// is cleaned up).
    ///
    /// # Errors
    /// As [`Redlock::release`]: after a loss, typically [`LockError::NotOwner`] or
    /// [`LockError::AlreadyExpired`].
    pub async fn release(self) -> Result<(), LockError> {
        let lock = self.entry.take();
        self.engine.watchdog().wake.notify_one();
        match lock {
            Some(lock) => self.engine.release(lock).await,
            None => Err(LockError::AlreadyExpired),
        }
    }
}

impl Drop for RenewedLock {
    fn drop(&mut self) {
        let lock = self.entry.take();
        self.engine.watchdog().wake.notify_one();
        if let Some(lock) = lock {
            // Best effort: other clients need not wait for the TTL. Without a runtime, it just expires.
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let engine = self.engine.clone();
                rt.spawn(async move { engine.release(lock).await });
            }
        }
    }
}

impl Entry {
    fn lock(&self) -> MutexGuard<'_, EntryState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current end of validity; now once released.
    pub(crate) fn valid_until(&self) -> Instant {
        self.lock()
            .lock
            .as_ref()
            .map_or_else(Instant::now, |l| l.valid_until)
    }

    /// Whether the lock is lost: the watchdog said so, or its validity ended (even if the watchdog
    /// has not run yet, e.g. because the work blocks the runtime).
    pub(crate) fn is_lost(&self) -> bool {
        self.lost.is_cancelled() || Instant::now() >= self.valid_until()
    }

    /// Completes when [`is_lost`](Self::is_lost) becomes true.
    pub(crate) async fn lost(&self) {
        loop {
            let until = self.valid_until();
            tokio::select! {
                _ = self.lost.cancelled() => return,
                _ = tokio::time::sleep_until(until) => {
                    if Instant::now() >= self.valid_until() {
                        return;
                    }
                }
            }
        }
    }

    /// Takes the lock out (release or drop); the watchdog forgets the entry.
    fn take(&self) -> Option<Lock> {
        let lock = self.lock().lock.take();
        self.lost.cancel();
        lock
    }

    /// When the watchdog must next look at this entry: the next renewal, or the end of validity if
    /// renewal has stopped. `None` once released or lost.
    fn next_event(&self) -> Option<Instant> {
        let st = self.lock();
        let lock = st.lock.as_ref()?;
        if self.lost.is_cancelled() {
            return None;
        }
        if !self.renews(&st) {
            return Some(lock.valid_until);
        }
        Some(st.next_renewal.min(lock.valid_until))
    }

    fn renews(&self, st: &EntryState) -> bool {
        self.max_renewals.is_none_or(|max| st.renewals < max)
            && self.stop_renewing_at.is_none_or(|at| Instant::now() < at)
    }
}

impl Watchdog {
    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds an entry; returns whether the task must be started.
    fn register(&self, entry: Weak<Entry>) -> bool {
        let mut registry = self.registry();
        registry.entries.push(entry);
        let start = !registry.running;
        registry.running = true;
        drop(registry);
        self.wake.notify_one();
        start
    }
}

/// The watchdog loop. Holds the engine weakly, so it never keeps it alive; ends when no entry is left
/// (the next `renew` starts it again).
async fn run(engine: Weak<crate::redlock::Inner>) {
    loop {
        let Some(engine) = Redlock::upgrade(&engine) else {
            return;
        };
        let dog = engine.watchdog();
        let now = Instant::now();
        let mut due = Vec::new();
        let mut next: Option<Instant> = None;
        {
            let mut registry = dog.registry();
            registry.entries.retain(|weak| {
                let Some(entry) = weak.upgrade() else {
                    return false;
                };
                let Some(at) = entry.next_event() else {
                    return false;
                };
                if at <= now {
                    due.push(entry);
                } else {
                    next = Some(next.map_or(at, |n| n.min(at)));
                }
                true
            });
            if registry.entries.is_empty() {
                registry.running = false;
                return;
            }
        }
        if due.is_empty() {
            let sleep_until = next.unwrap_or(now + Duration::from_secs(1));
            // Woken early by a new registration or a release (the latter so the engine is let go soon).
            tokio::select! {
                _ = tokio::time::sleep_until(sleep_until) => {}
                _ = dog.wake.notified() => {}
            }
            continue;
        }
        // Every due lock's round starts in this one poll: each node gets all of them in one write.
        futures::future::join_all(due.iter().map(|entry| tick(&engine, entry))).await;
    }
}

/// Renews one due entry, or declares it lost if its validity ended.
async fn tick(engine: &Redlock, entry: &Entry) {
    let (cmd, ttl, valid_until) = {
        let st = entry.lock();
        let Some(lock) = st.lock.as_ref() else { return };
        let now = Instant::now();
        if now >= lock.valid_until {
            drop(st);
            entry.lost.cancel();
            return;
        }
        if !entry.renews(&st) {
            return;
        }
        let cmd = Cmd::Script {
            script: lock.kind.extend_script(),
            keys: lock.keys.clone(),
            value: lock.value,
            args: Args::of(&[millis(lock.ttl)]),
        };
        (cmd, lock.ttl, lock.valid_until)
    };
    let start = Instant::now();
    let deadline = (start + engine.settings().timing.node_timeout(ttl)).min(valid_until);
    let tally = fan_out(engine.nodes(), &cmd, deadline, Vote::of_script).await;
    engine.metrics().round(Op::Renew, &tally, start.elapsed());
    let mut st = entry.lock();
    let Some(lock) = st.lock.as_mut() else { return };
    match engine.settle_extend(lock, ttl, start, tally) {
        Ok(()) => {
            let valid_until = lock.valid_until;
            let node_timeout = engine.settings().timing.node_timeout(ttl);
            st.renewals += 1;
            st.next_renewal = next_renewal(start, entry.every, valid_until, node_timeout);
        }
        Err(_) => {
            drop(st);
            entry.lost.cancel();
        }
    }
}
