//! The retry policy: how many more attempts, and a random pause between them.
//!
//! The pause is `delay + uniform(0, jitter)`: contenders that failed together must not retry together,
//! or they split the nodes again (the Redlock design's advice for split votes).

use std::time::Duration;

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
