//! One renewed lock's record: the lock itself (until released), its renewal schedule and caps, and
//! the signal that it was lost. Shared by the holder's handle (`crate::kinds::renewed`), the
//! watchdog's schedule and its rounds.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::lock::Lock;

/// How early a renewal may start to share its round with renewals due now (see
/// [`Entry::coalesce_window`]): renewing early is always safe, and locks renewed together stay
/// together, since each one's next renewal counts from its round's start.
pub(crate) const COALESCE_WINDOW: Duration = Duration::from_millis(2);

#[derive(Debug)]
pub(crate) struct Entry {
    state: Mutex<EntryState>,
    pub(crate) lost: CancellationToken,
    pub(crate) every: Duration,
    stop_renewing_at: Option<Instant>,
    max_renewals: Option<u32>,
}

#[derive(Debug)]
pub(crate) struct EntryState {
    /// `None` once released.
    pub(crate) lock: Option<Lock>,
    pub(crate) renewals: u32,
    pub(crate) next_renewal: Instant,
}

/// When to renew next after a round started at `from`: one interval later, but never later than one
/// node timeout before the validity ends (a lock handed over with little validity left renews at once).
pub(crate) fn next_renewal(
    from: Instant,
    every: Duration,
    valid_until: Instant,
    node_timeout: Duration,
) -> Instant {
    let latest = valid_until.checked_sub(node_timeout).unwrap_or(valid_until);
    from.checked_add(every).map_or(latest, |at| at.min(latest))
}

impl Entry {
    pub(crate) fn new(
        lock: Lock,
        every: Duration,
        stop_renewing_at: Option<Instant>,
        max_renewals: Option<u32>,
        first: Instant,
    ) -> Self {
        Self {
            lost: CancellationToken::new(),
            every,
            stop_renewing_at,
            max_renewals,
            state: Mutex::new(EntryState {
                lock: Some(lock),
                renewals: 0,
                next_renewal: first,
            }),
        }
    }

    /// Renewals done so far.
    pub(crate) fn renewals(&self) -> u32 {
        self.lock().renewals
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, EntryState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current end of validity; now once released.
    pub(crate) fn valid_until(&self) -> Instant {
        self.lock()
            .lock
            .as_ref()
            .map_or_else(Instant::now, Lock::valid_until)
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

    /// Declares the lock lost (the holder's token fires at once), said at warn level with its cause
    /// and counted in `redlock_locks_lost_total{cause}`: `expired` (its validity ended unrenewed),
    /// `taken` (a renewal found another owner's value), `gone` (the keys had expired on the nodes),
    /// `unreachable` (a majority could no longer confirm it). Never the lock value.
    /// Called with the entry's state locked (`st`: its lock and renewals), so it takes no lock.
    pub(crate) fn declare_lost(&self, st: &EntryState, cause: &'static str) {
        if self.lost.is_cancelled() {
            return;
        }
        metrics::counter!("redlock_locks_lost_total", "cause" => cause).increment(1);
        let resource = st.lock.as_ref().map(|l| l.resource()).unwrap_or_default();
        tracing::warn!(
            resource = %String::from_utf8_lossy(resource),
            cause,
            renewals = st.renewals,
            "renewed lock lost: the work it protects must stop"
        );
        self.lost.cancel();
    }

    /// Takes the lock out (release or drop); the watchdog forgets the entry.
    pub(crate) fn take(&self) -> Option<Lock> {
        let lock = self.lock().lock.take();
        self.lost.cancel();
        lock
    }

    /// When the watchdog must next look at this entry: the next renewal, or the end of validity if
    /// renewal has stopped. `None` once released or lost.
    pub(crate) fn next_event(&self) -> Option<Instant> {
        let st = self.lock();
        let lock = st.lock.as_ref()?;
        if self.lost.is_cancelled() {
            return None;
        }
        if !self.renews(&st) {
            return Some(lock.valid_until());
        }
        Some(st.next_renewal.min(lock.valid_until()))
    }

    /// How much earlier than due this entry may renew to join a round that starts now: a sixteenth
    /// of its interval, at most [`COALESCE_WINDOW`]; none when it has stopped
    /// renewing (its next event is then the end of its validity, which must not come early).
    pub(crate) fn coalesce_window(&self) -> Duration {
        if self.renews(&self.lock()) {
            (self.every / 16).min(COALESCE_WINDOW)
        } else {
            Duration::ZERO
        }
    }

    pub(crate) fn renews(&self, st: &EntryState) -> bool {
        self.max_renewals.is_none_or(|max| st.renewals < max)
            && self.stop_renewing_at.is_none_or(|at| Instant::now() < at)
    }
}
