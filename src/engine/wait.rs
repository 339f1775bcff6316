//! The one wait loop every kind's acquire runs: rounds until one wins, the pause between them cut
//! short by a release's wake-up (or a release's answer to a claim on a parked waiter), and the rules
//! for when the wait ends (its deadline, its retry budget, an outage). What differs per kind is a
//! [`Waiter`]: what one round sends and how it is counted, how long to pause after a loss or whether
//! to go again at once, and what a wake-up brings (a lock granted by a release, or an attempt).
//!
//! The waiters: the exclusive family's (`engine::acquire`: exclusive, fenced, read-write, semaphore,
//! multi; the cross-process take-over), the fair lock's (`kinds::fair::wait`: enqueue, agree and
//! attempts from its place) and the slot semaphore's (`api::slots`: a pass over the slots).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::futures::OwnedNotified;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::core::Core;
use crate::algo::retry::Wait;
use crate::error::LockError;
use crate::lock::Lock;

/// What a kind decides after a round it lost, when the wait goes on.
pub(crate) enum Next {
    /// Another round at once: a step of the same try (a fresh mark landed, a take-over began). Free:
    /// it does not use up a counted retry.
    AtOnce,
    /// Pause this long first (cut short by a wake-up); `free` when the pause is the kind's own early
    /// retry (a split vote), which does not use up a counted retry either.
    Pause { pause: Duration, free: bool },
}

/// What ended a pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// A release's wake-up on the waiter's subscription.
    Heard,
    /// The pause ran out (the timer is the safety net for every lost message).
    Timer,
    /// A release answered a claim on this waiter ([`Waiter::answered`]).
    Answered,
}

/// What a kind makes of a pause's end.
pub(crate) enum After {
    /// A release granted the lock: the wait is over without a round (boxed: the others are empty).
    Won(Box<Lock>),
    /// The next round, now.
    Round,
    /// Nothing to act on: back to the same pause (its end does not move). After a wake-up, the
    /// rest of the pause has the timer and the claim's answer only (a wake-up is heard once).
    Wait,
}

/// A kind's part in the wait loop ([`Core::wait_for`]). Its guards (a give-up on drop, a place to
/// leave) live in it: they fire when the wait ends without the lock, or when its future is dropped.
pub(crate) trait Waiter {
    /// What wakes this wait from a pause, armed before each round so a release during the round
    /// still ends the pause after it (`None`: the timer only).
    fn wake(&self) -> Option<Arc<Notify>>;

    /// One round (or a kind's indivisible pair of them), counting the rounds it sent in `attempts`;
    /// `until` is the wait's budget end, which a kind's admission or its wait for a release's answer
    /// must not outlast. The lock, or why not: `LockError::Timeout` with no last error when the
    /// wait's time ran out before the kind could send (the wait then ends, naming the last loss).
    fn round(
        &mut self,
        attempts: &mut u32,
        until: Option<Instant>,
    ) -> impl Future<Output = Result<Lock, LockError>> + Send;

    /// After a round lost with `err` that the wait follows with another: at once, or after a
    /// pause (`pause`: the engine's random retry pause, which the kind may shorten).
    fn next(&mut self, err: &LockError, pause: Duration) -> impl Future<Output = Next> + Send;

    /// Resolves when a release answered a claim on this waiter (a kind whose waiters park between
    /// rounds); never, by default. Polled first at the start of each pause (the fair lock marks
    /// itself parked there), and again after an `After::Wait`.
    fn answered(&self) -> impl Future<Output = ()> + Send {
        std::future::pending()
    }

    /// What the pause's end brings.
    fn after(&mut self, ended: Ended, until: Instant) -> impl Future<Output = After> + Send;
}

/// How long a wait may last: fixed when it begins.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// How the caller waits.
    pub(crate) wait: Wait,
    /// When the whole call must end (`None`: never).
    pub(crate) deadline: Option<Instant>,
    /// When the attempts must end: the deadline, or without one the retry budget's end. No pause
    /// runs past it, and no round starts after it.
    pub(crate) budget_end: Option<Instant>,
    /// How many counted retries may follow the first round.
    pub(crate) retries: u32,
}

impl Bounds {
    /// The bounds of a call that began at `began` (its deadline counts from there) and whose retry
    /// budget `budget` counts from now.
    pub(crate) fn new(core: &Core, wait: Wait, began: Instant, budget: Duration) -> Self {
        let s = core.settings();
        let deadline = wait.deadline(began, s.acquire_timeout);
        Self {
            wait,
            deadline,
            budget_end: wait.budget_end(deadline, Instant::now(), budget),
            retries: wait.retry_count(s.retry.count, s.acquire_timeout),
        }
    }
}

impl Core {
    /// Runs `waiter`'s rounds until one wins or the wait ends as `bounds` say: the call's own time
    /// (its deadline) ends it with [`LockError::Timeout`] naming the last loss; the retry budget, an
    /// error that is not retryable, or `retry_count` counted losses in a row end it with the last
    /// loss itself. Retries at once, after a wake-up or as the kind's early retry do not count.
    /// A last pause that would pass the deadline is cut to it, still listening.
    pub(crate) async fn wait_for(
        &self,
        waiter: &mut impl Waiter,
        bounds: Bounds,
    ) -> Result<Lock, LockError> {
        let Bounds {
            wait,
            deadline,
            budget_end,
            retries,
        } = bounds;
        let mut attempts = 0u32;
        // Counted losses in a row (`Wait::counts`): for a call that waits until acquired only an
        // outage's, since a loss to another owner does not count and resets it; for the configured
        // wait every loss, up to `retry_count`.
        let mut counted = 0u32;
        // The last round's loss, for a `Timeout` that ends the wait before the next round is sent.
        let mut last: Option<LockError> = None;
        // The wait's one last round, just before its deadline, has been given.
        let mut last_round = false;
        loop {
            if self.is_closed() {
                // Shut down while waiting: the kind's guards give up what it holds of the wait.
                return Err(LockError::Closed);
            }
            // Armed before the round, so a release that lands while it runs still wakes us.
            let mut woken = armed(waiter.wake());
            let err = match waiter.round(&mut attempts, budget_end).await {
                Ok(mut lock) => {
                    lock.set_attempts(attempts);
                    return Ok(lock);
                }
                // Out of time before the kind could send: the wait ends with the last loss.
                Err(LockError::Timeout { last: None, .. }) => {
                    let last = last.map(Box::new);
                    return Err(LockError::Timeout { attempts, last });
                }
                Err(err) => err,
            };
            counted = match wait.counts(&err) {
                true => counted + 1,
                false => 0,
            };
            let out_of_time = budget_end.is_some_and(|end| Instant::now() >= end);
            if out_of_time && deadline.is_some() && wait.retries() && err.is_retryable() {
                // The call's own time ran out: say so, with why the last round lost.
                return Err(timeout(attempts, err));
            }
            if !wait.retries() || !err.is_retryable() || counted > retries || out_of_time {
                return Err(err);
            }
            // The wait's end: its own time (a deadline) says `Timeout`, the retry budget the loss.
            let end_with = |err: LockError| match deadline {
                Some(_) => Err(timeout(attempts, err)),
                None => Err(err),
            };
            let (pause, free) = match waiter.next(&err, self.settings().retry.next_delay()).await {
                // No round starts after the budget's end, however it was decided.
                Next::AtOnce if budget_end.is_some_and(|e| Instant::now() >= e) => {
                    return end_with(err)
                }
                Next::AtOnce => {
                    counted = counted.saturating_sub(1);
                    last = Some(err);
                    continue;
                }
                Next::Pause { pause, free } => (pause, free),
            };
            let mut until = Instant::now() + pause;
            // The pause would outlast the wait. The retry budget ends it now; the call's own time
            // (a deadline) is waited out, listening: a release heard before the deadline still
            // gets its round, and a caller who asked to wait up to `d` is not answered earlier.
            // First one last round just before the deadline, for what no message tells (a waiter
            // that hears nothing, keys that expired, a message lost); then the rest, listening.
            if let Some(end) = budget_end.filter(|end| until >= *end) {
                match deadline {
                    None => return end_with(err),
                    Some(_) if !last_round => {
                        last_round = true;
                        until = end.checked_sub(LAST_ROUND_LEAD).unwrap_or(end);
                    }
                    Some(_) => until = end,
                }
            }
            // A subscription the kind began after the round: one immediate wake-up covers a
            // release that landed before it was active.
            if woken.is_none() {
                woken = armed(waiter.wake());
            }
            let mut heard = false;
            loop {
                let ended = pause_until(&mut woken, until, waiter).await;
                heard |= ended == Ended::Heard;
                match waiter.after(ended, until).await {
                    After::Won(mut lock) => {
                        lock.set_attempts(attempts);
                        return Ok(*lock);
                    }
                    // No round starts at or after the deadline, however the pause ended (a
                    // wake-up handled past it): a release heard in time gets its round only if
                    // that can still start before it.
                    After::Round if deadline.is_some_and(|d| Instant::now() >= d) => {
                        return end_with(err)
                    }
                    After::Round => break,
                    After::Wait => {}
                }
            }
            self.metrics().retry();
            if free || heard {
                // Woken by a release (or the kind's own early retry): this retry is free.
                counted = counted.saturating_sub(1);
            }
            last = Some(err);
        }
    }
}

/// How long before its deadline a wait's last round starts: a round started before the deadline
/// runs with its full node deadline, so this only has to put the start before it, past the timer's
/// rounding (tokio's timers fire at the first millisecond tick at or after their instant) and a
/// little scheduling. A pause that still ends past the deadline gives no last round.
pub(crate) const LAST_ROUND_LEAD: Duration = Duration::from_millis(5);

/// The wait's own time ran out, after `attempts` rounds, the last lost with `last`.
fn timeout(attempts: u32, last: LockError) -> LockError {
    LockError::Timeout {
        attempts,
        last: Some(Box::new(last)),
    }
}

type Woken = Option<Pin<Box<OwnedNotified>>>;

/// A fresh wake-up signal, armed now.
fn armed(notify: Option<Arc<Notify>>) -> Woken {
    notify.map(|n| {
        let mut woken = Box::pin(n.notified_owned());
        woken.as_mut().enable();
        woken
    })
}

/// Waits for the armed wake-up (taken once it fires: a spent one is not polled again), `until`, or
/// a release's answer to the waiter's claim, whichever comes first.
async fn pause_until(woken: &mut Woken, until: Instant, waiter: &impl Waiter) -> Ended {
    let heard = async {
        match woken.as_mut() {
            Some(w) => w.as_mut().await,
            None => std::future::pending().await,
        }
    };
    let ended = tokio::select! {
        biased;
        _ = heard => Ended::Heard,
        _ = tokio::time::sleep_until(until) => Ended::Timer,
        _ = waiter.answered() => Ended::Answered,
    };
    if ended == Ended::Heard {
        *woken = None;
    }
    ended
}
