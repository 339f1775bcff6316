//! Validity arithmetic: how long a lock may be trusted, on the monotonic clock, without ever underflowing.
//!
//! `validity = TTL - elapsed - drift`, with `drift = TTL x drift_factor + 2 ms`: the nodes' clocks may run
//! a little fast, and timers have millisecond granularity. A lock is granted only if `validity` is above
//! zero **and** at least `TTL x min_validity_factor`: a lock granted with 2 ms left cannot protect anything.
//!
//! Why the 2 ms: TTLs are sent in whole milliseconds rounded down (`Core::check_ttl`, so validity is
//! computed from what the nodes got), and a node expires a key by its own millisecond clock read when the
//! `SET` ran, truncated, so a key may die up to 1 ms before `grant + TTL`; elapsed time is measured from
//! before the first byte was sent, so it only overstates the node's share. Every comparison here is on
//! the local monotonic clock; nothing read from a server's clock enters validity.

use std::time::Duration;

/// Extra drift for timer granularity, added to `TTL x drift_factor` (as the Redlock design does).
const GRANULARITY: Duration = Duration::from_millis(2);
/// Default per-node deadline: this fraction of the TTL …
const NODE_TIMEOUT_FACTOR: f64 = 0.05;
/// … capped here, since a healthy node answers in well under a millisecond.
const NODE_TIMEOUT_CAP: Duration = Duration::from_millis(50);

/// The validated timing knobs of [`crate::Config`]. Factors are in `[0, 1)`, so no product can overflow.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub(crate) drift_factor: f64,
    pub(crate) node_timeout: Option<Duration>,
    pub(crate) min_validity_factor: f64,
}

impl Timing {
    /// Timing knobs; factors must be in `[0, 1)` (the configuration checks this).
    pub fn new(
        drift_factor: f64,
        node_timeout: Option<Duration>,
        min_validity_factor: f64,
    ) -> Self {
        Self {
            drift_factor,
            node_timeout,
            min_validity_factor,
        }
    }

    /// The least deadline for each node's reply within one round of a lock with this TTL: the
    /// configured one, or 5 % of the TTL capped to 50 ms. Used to validate TTLs and policies (it does
    /// not move); rounds use [`fitted_node_timeout`](Self::fitted_node_timeout).
    pub fn node_timeout(&self, ttl: Duration) -> Duration {
        self.node_timeout
            .unwrap_or_else(|| ttl.mul_f64(NODE_TIMEOUT_FACTOR).min(NODE_TIMEOUT_CAP))
    }

    /// The deadline a round actually uses, given the slowest voting node's round-trip bound `rtt`.
    ///
    /// A configured `node_timeout` wins. Otherwise the larger of [`node_timeout`](Self::node_timeout)
    /// and `rtt`, but no more than the TTL allows: a lock confirmed at the deadline must still have its
    /// minimum validity, so the deadline stays below `TTL - drift - min_validity`. Safety does not
    /// depend on this value (validity is measured, whatever the deadline); it decides how long a slow
    /// node is waited for.
    pub fn fitted_node_timeout(&self, ttl: Duration, rtt: Option<Duration>) -> Duration {
        let base = self.node_timeout(ttl);
        if self.node_timeout.is_some() {
            return base;
        }
        let Some(rtt) = rtt else { return base };
        rtt.max(base).min(self.longest_round(ttl).max(base))
    }

    /// The longest a round of a lock with this TTL can usefully last: confirmations after
    /// `TTL - drift - min_validity` leave less than the minimum validity.
    pub fn longest_round(&self, ttl: Duration) -> Duration {
        ttl.saturating_sub(self.drift(ttl))
            .saturating_sub(self.min_validity(ttl))
    }

    /// The clock-drift allowance subtracted from every validity.
    pub fn drift(&self, ttl: Duration) -> Duration {
        ttl.mul_f64(self.drift_factor).saturating_add(GRANULARITY)
    }

    /// `TTL - elapsed - drift`, or `None` when nothing is left.
    pub fn validity(&self, ttl: Duration, elapsed: Duration) -> Option<Duration> {
        ttl.checked_sub(elapsed)?
            .checked_sub(self.drift(ttl))
            .filter(|v| !v.is_zero())
    }

    /// The least validity a granted lock may have.
    pub fn min_validity(&self, ttl: Duration) -> Duration {
        ttl.mul_f64(self.min_validity_factor)
    }
}

/// `d` in whole milliseconds (rounded down, saturating): what `PX` and the scripts take.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing() -> Timing {
        Timing {
            drift_factor: 0.01,
            node_timeout: None,
            min_validity_factor: 0.1,
        }
    }

    #[test]
    fn validity_subtracts_elapsed_and_drift() {
        let t = timing();
        let ttl = Duration::from_secs(10);
        // drift = 100 ms + 2 ms
        assert_eq!(
            t.validity(ttl, Duration::from_millis(8)),
            Some(Duration::from_millis(9890))
        );
    }

    #[test]
    fn validity_never_underflows() {
        let t = timing();
        let ttl = Duration::from_millis(100);
        assert_eq!(t.validity(ttl, Duration::from_millis(99)), None);
        assert_eq!(t.validity(ttl, Duration::from_secs(5)), None);
        assert_eq!(t.validity(Duration::from_millis(1), Duration::ZERO), None);
        // exactly zero left is not a lock
        assert_eq!(t.validity(ttl, Duration::from_millis(97)), None);
    }

    #[test]
    fn node_timeout_defaults_to_five_percent_capped() {
        let t = timing();
        assert_eq!(
            t.node_timeout(Duration::from_millis(200)),
            Duration::from_millis(10)
        );
        assert_eq!(
            t.node_timeout(Duration::from_secs(30)),
            Duration::from_millis(50)
        );
        let fixed = Timing {
            node_timeout: Some(Duration::from_millis(7)),
            ..t
        };
        assert_eq!(
            fixed.node_timeout(Duration::from_secs(30)),
            Duration::from_millis(7)
        );
    }

    #[test]
    fn the_fitted_deadline_follows_the_rtt_within_what_the_ttl_allows() {
        let t = timing();
        let ttl = Duration::from_millis(200);
        let ms = Duration::from_millis;
        assert_eq!(
            t.fitted_node_timeout(ttl, None),
            ms(10),
            "no sample: the base"
        );
        assert_eq!(
            t.fitted_node_timeout(ttl, Some(ms(1))),
            ms(10),
            "fast node: the base"
        );
        assert_eq!(
            t.fitted_node_timeout(ttl, Some(ms(120))),
            ms(120),
            "slow link"
        );
        // 200 - (2 + 2) drift - 20 min validity
        assert_eq!(
            t.fitted_node_timeout(ttl, Some(ms(900))),
            ms(176),
            "capped by the TTL"
        );
        let fixed = Timing {
            node_timeout: Some(ms(7)),
            ..t
        };
        assert_eq!(
            fixed.fitted_node_timeout(ttl, Some(ms(120))),
            ms(7),
            "explicit wins"
        );
        let _ = t.fitted_node_timeout(Duration::MAX, Some(Duration::MAX));
        let _ = t.fitted_node_timeout(ms(1), Some(Duration::MAX));
    }

    #[test]
    fn extreme_ttls_do_not_panic() {
        let t = Timing {
            drift_factor: 0.999,
            node_timeout: None,
            min_validity_factor: 0.999,
        };
        let huge = Duration::MAX;
        let _ = t.validity(huge, Duration::ZERO);
        let _ = t.min_validity(huge);
        let _ = t.node_timeout(huge);
    }
}
