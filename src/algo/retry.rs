//! The retry policy: how many more attempts, and a random pause between them.
//!
//! The pause is `delay + uniform(0, jitter)`: contenders that failed together must not retry together,
//! or they split the nodes again (the Redlock design's advice for split votes).

use std::time::Duration;

use tokio::time::Instant;

use crate::error::LockError;

/// How long one acquire waits for its lock: per call ([`crate::LockRequest::wait`]).
///
/// Default: [`UntilAcquired`](Self::UntilAcquired), as `tokio::sync::Mutex::lock` and Redisson's
/// `lock()` wait, and as the `redlock acquire` command does: as long as another owner holds the
/// lock, but an outage ends in an error, not a hang. The per-kind methods (`acquire`,
/// `acquire_read`, ...) wait [`Configured`](Self::Configured).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Wait {
    /// Until acquired while the lock is held by another owner, however long that takes; gives up
    /// after `Config::retry_count` retries in a row lost for another reason (nodes unreachable or
    /// failing, no quorum possible), and at `Config::acquire_timeout` when it is set.
    #[default]
    UntilAcquired,
    /// As the engine is configured: until `Config::acquire_timeout` when it is set (retrying as
    /// often as it takes, whatever `retry_count` says), otherwise `Config::retry_count` retries
    /// (default 10 pauses of 50-100 ms: about 0.5-1 s on a local network, never more than the
    /// retries' time budget, 1.65 s at the default 30 s TTL).
    Configured,
    /// One attempt, no retry: fails at once when another owner holds the lock (here or elsewhere).
    Once,
    /// Retries until acquired or this long has passed since the call began.
    UpTo(Duration),
    /// Retries until acquired: only dropping the future stops it (which leaves nothing behind).
    Forever,
}

impl Wait {
    /// Whether a lost attempt is followed by another (and a local waiter queues).
    pub(crate) fn retries(self) -> bool {
        self != Self::Once
    }

    /// When the whole call must end, for a call that began at `began` (`None`: never).
    pub(crate) fn deadline(
        self,
        began: Instant,
        acquire_timeout: Option<Duration>,
    ) -> Option<Instant> {
        match self {
            Self::UntilAcquired | Self::Configured | Self::Once => {
                acquire_timeout.and_then(|t| began.checked_add(t))
            }
            // Past what an `Instant` can hold is as good as never.
            Self::UpTo(limit) => began.checked_add(limit),
            Self::Forever => None,
        }
    }

    /// How many counted retries the call may make after its first attempt: with an acquire timeout
    /// the configured wait is bounded by that time alone, as [`Wait::Configured`] says. For
    /// [`Wait::UntilAcquired`], retries in a row that are not [`counted`](Self::counts) reset it.
    pub(crate) fn retry_count(self, configured: u32, acquire_timeout: Option<Duration>) -> u32 {
        match self {
            Self::Configured if acquire_timeout.is_some() => u32::MAX,
            Self::Configured | Self::UntilAcquired => configured,
            Self::Once => 0,
            Self::UpTo(_) | Self::Forever => u32::MAX,
        }
    }

    /// The time the attempts may take from `now`: the deadline, or without one (as configured) the
    /// time the counted retries would take (`budget`).
    pub(crate) fn budget_end(
        self,
        deadline: Option<Instant>,
        now: Instant,
        budget: Duration,
    ) -> Option<Instant> {
        match self {
            Self::Configured | Self::Once => deadline.or_else(|| now.checked_add(budget)),
            Self::UntilAcquired | Self::UpTo(_) | Self::Forever => deadline,
        }
    }

    /// Whether an attempt lost with `err` uses up one of the retries [`retry_count`] allows. For
    /// [`Wait::UntilAcquired`] only a loss that is not to another owner counts (the caller starts
    /// counting again after a contended one: it is an outage's losses in a row that end the call).
    ///
    /// [`retry_count`]: Self::retry_count
    pub(crate) fn counts(self, err: &LockError) -> bool {
        !(self == Self::UntilAcquired && matches!(err, LockError::Contended { .. }))
    }
}

/// Validated retry knobs of [`crate::Config`].
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub(crate) count: u32,
    pub(crate) delay: Duration,
    pub(crate) jitter: Duration,
}

impl RetryPolicy {
    /// `count` retries, pausing `delay + uniform(0, jitter)` between attempts.
    pub fn new(count: u32, delay: Duration, jitter: Duration) -> Self {
        Self {
            count,
            delay,
            jitter,
        }
    }

    /// How long an acquire's retries may take in all: `count + 1` rounds of the longest pause plus a
    /// node deadline each. Retries woken early by a release do not count against `count`, so this
    /// bounds them instead; waiting in the local queue stands in for the attempts it saves, so it gets
    /// the same budget.
    pub(crate) fn budget(&self, node_timeout: Duration) -> Duration {
        let round = self.delay + self.jitter + node_timeout;
        round.saturating_mul(self.count.saturating_add(1))
    }

    /// A random pause before the next attempt.
    pub fn next_delay(&self) -> Duration {
        let jitter_us = u64::try_from(self.jitter.as_micros()).unwrap_or(u64::MAX);
        self.delay
            .saturating_add(Duration::from_micros(fastrand::u64(0..=jitter_us)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_stays_in_range_and_varies() {
        let p = RetryPolicy {
            count: 3,
            delay: Duration::from_millis(10),
            jitter: Duration::from_millis(5),
        };
        let samples: Vec<_> = (0..1000).map(|_| p.next_delay()).collect();
        assert!(samples
            .iter()
            .all(|d| *d >= Duration::from_millis(10) && *d <= Duration::from_millis(15)));
        let distinct: std::collections::HashSet<_> = samples.iter().collect();
        assert!(distinct.len() > 100, "jitter should spread retries");
    }

    #[test]
    fn the_budget_covers_every_counted_retry() {
        let p = RetryPolicy::new(3, Duration::from_millis(10), Duration::from_millis(5));
        // 4 attempts, each the longest pause plus a node deadline.
        assert_eq!(
            p.budget(Duration::from_millis(1)),
            Duration::from_millis(64)
        );
        let p = RetryPolicy::new(u32::MAX, Duration::from_secs(1), Duration::ZERO);
        assert_eq!(p.budget(Duration::ZERO), Duration::from_secs(1) * u32::MAX);
    }

    #[test]
    fn a_wait_bounds_the_call_as_it_says() {
        let now = Instant::now();
        let s = Duration::from_secs;
        assert_eq!(Wait::Once.retry_count(10, None), 0);
        assert_eq!(Wait::Once.retry_count(10, Some(s(5))), 0);
        assert!(!Wait::Once.retries());
        assert_eq!(Wait::Configured.retry_count(10, None), 10);
        // An acquire timeout bounds the configured wait by time alone, not by `retry_count`.
        assert_eq!(Wait::Configured.retry_count(10, Some(s(5))), u32::MAX);
        assert_eq!(Wait::UpTo(s(3)).deadline(now, Some(s(1))), Some(now + s(3)));
        assert_eq!(Wait::Configured.deadline(now, Some(s(1))), Some(now + s(1)));
        assert_eq!(Wait::Forever.deadline(now, Some(s(1))), None);
        assert_eq!(Wait::Forever.budget_end(None, now, s(2)), None);
        assert_eq!(
            Wait::Configured.budget_end(None, now, s(2)),
            Some(now + s(2))
        );
        assert_eq!(Wait::UpTo(Duration::MAX).deadline(now, None), None);
    }

    #[test]
    fn zero_jitter_is_exact_and_huge_values_saturate() {
        let p = RetryPolicy {
            count: 0,
            delay: Duration::from_millis(3),
            jitter: Duration::ZERO,
        };
        assert_eq!(p.next_delay(), Duration::from_millis(3));
        let p = RetryPolicy {
            count: 0,
            delay: Duration::MAX,
            jitter: Duration::MAX,
        };
        assert_eq!(p.next_delay(), Duration::MAX);
    }
}
