//! A node's round-trip estimate, as TCP keeps one (RFC 6298): smoothed RTT and its mean deviation,
//! and the bound `srtt + 4 x rttvar` that a reply is very unlikely to exceed.
//!
//! Why: a fixed node deadline (5 % of the TTL) is either far too long for a local node or shorter than
//! one round trip on a slow link (a 40-80 ms RTT with a 200 ms TTL gives a 10 ms deadline: no lock is
//! ever granted). The estimate lets the default deadline follow the network; under this process's own
//! load the samples grow too (they include the time until our reader ran), so a busy client waits
//! longer instead of blaming the node. Pure logic; fed by the connection's reader, one sample per
//! written batch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Lock-free estimate: written by one reader task, read by every round.
#[derive(Debug, Default)]
pub(crate) struct RttEstimate {
    /// Smoothed RTT in microseconds; 0 until the first sample.
    srtt_us: AtomicU64,
    /// Mean deviation in microseconds.
    rttvar_us: AtomicU64,
}

impl RttEstimate {
    /// Folds in one measured round trip (gains 1/8 and 1/4, as RFC 6298).
    ///
    /// Loads and stores are separate, not one atomic update: only the connection's reader calls
    /// this, and a round reading a half-updated pair gets a value between two valid estimates.
    pub(crate) fn sample(&self, rtt: Duration) {
        let r = u64::try_from(rtt.as_micros()).unwrap_or(u64::MAX).max(1);
        let srtt = self.srtt_us.load(Ordering::Relaxed);
        let (srtt, var) = if srtt == 0 {
            (r, r / 2)
        } else {
            let var = self.rttvar_us.load(Ordering::Relaxed);
            let var = (var.saturating_mul(3).saturating_add(srtt.abs_diff(r))) / 4;
            let srtt = (srtt.saturating_mul(7).saturating_add(r)) / 8;
            (srtt.max(1), var)
        };
        self.rttvar_us.store(var, Ordering::Relaxed);
        self.srtt_us.store(srtt, Ordering::Relaxed);
    }

    /// A first estimate from a connect: TCP's handshake and ours are about two round trips, so half
    /// of `connect` — used only while nothing better is known, so the first round after a connect
    /// over a slow link does not run on the fixed default deadline.
    pub(crate) fn seed(&self, connect: Duration) {
        if self.srtt_us.load(Ordering::Relaxed) == 0 {
            self.sample(connect / 2);
        }
    }

    /// `srtt + 4 x rttvar`, or `None` before the first sample.
    pub(crate) fn bound(&self) -> Option<Duration> {
        let srtt = self.srtt_us.load(Ordering::Relaxed);
        if srtt == 0 {
            return None;
        }
        let var = self.rttvar_us.load(Ordering::Relaxed);
        Some(Duration::from_micros(
            srtt.saturating_add(var.saturating_mul(4)),
        ))
    }

    /// The smoothed RTT, or `None` before the first sample.
    pub(crate) fn smoothed(&self) -> Option<Duration> {
        let srtt = self.srtt_us.load(Ordering::Relaxed);
        (srtt != 0).then(|| Duration::from_micros(srtt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_sets_srtt_and_half_as_variation() {
        let e = RttEstimate::default();
        assert_eq!(e.bound(), None);
        e.sample(Duration::from_millis(40));
        assert_eq!(e.smoothed(), Some(Duration::from_millis(40)));
        assert_eq!(e.bound(), Some(Duration::from_millis(40 + 4 * 20)));
    }

    #[test]
    fn follows_a_change_in_delay() {
        let e = RttEstimate::default();
        for _ in 0..100 {
            e.sample(Duration::from_micros(100));
        }
        assert!(e.bound().unwrap() < Duration::from_micros(200));
        for _ in 0..60 {
            e.sample(Duration::from_millis(60));
        }
        let srtt = e.smoothed().unwrap();
        assert!(
            srtt > Duration::from_millis(55) && srtt <= Duration::from_millis(60),
            "{srtt:?}"
        );
        for _ in 0..60 {
            e.sample(Duration::from_micros(100));
        }
        assert!(e.smoothed().unwrap() < Duration::from_millis(1));
    }

    #[test]
    fn extreme_samples_do_not_overflow() {
        let e = RttEstimate::default();
        e.sample(Duration::MAX);
        e.sample(Duration::ZERO);
        e.sample(Duration::MAX);
        let _ = e.bound();
    }
}
