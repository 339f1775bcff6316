//! What a worker records (one set of histograms per worker, merged at the end) and the summaries
//! computed from it: percentiles and Jain's fairness index.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::overtakes::Grant;

/// Latency histograms count microseconds, 1 µs to 60 s, 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("static histogram bounds are valid")
}

/// One worker's record (or, after [`WorkerStats::merge`], a whole run's).
#[derive(Debug, Clone)]
pub struct WorkerStats {
    /// Acquire latency in µs, first attempt to success, retries included (successful acquires only).
    pub acquire: Histogram<u64>,
    /// Release latency in µs.
    pub release: Histogram<u64>,
    /// Successful acquire-hold-release cycles.
    pub cycles: u64,
    /// Acquire calls, successful or not.
    pub acquire_calls: u64,
    /// Attempts over the acquire calls whose engine reported them.
    pub attempts: u64,
    /// Acquire calls whose engine reported attempts.
    pub attempts_known: u64,
    /// Failed acquire calls by cause.
    pub failed_acquires: BTreeMap<&'static str, u64>,
    /// Failed releases by cause.
    pub failed_releases: BTreeMap<&'static str, u64>,
    /// Each successful acquire's key and instants, for the overtakes (counted after the run).
    pub grants: Vec<Grant>,
}

impl Default for WorkerStats {
    fn default() -> Self {
        Self {
            acquire: histogram(),
            release: histogram(),
            cycles: 0,
            acquire_calls: 0,
            attempts: 0,
            attempts_known: 0,
            failed_acquires: BTreeMap::new(),
            failed_releases: BTreeMap::new(),
            grants: Vec::new(),
        }
    }
}

impl WorkerStats {
    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &WorkerStats) {
        // Same bounds on both sides, so adding cannot fail.
        self.acquire
            .add(&other.acquire)
            .expect("histograms share bounds");
        self.release
            .add(&other.release)
            .expect("histograms share bounds");
        self.cycles += other.cycles;
        self.acquire_calls += other.acquire_calls;
        self.attempts += other.attempts;
        self.attempts_known += other.attempts_known;
        for (cause, n) in &other.failed_acquires {
            *self.failed_acquires.entry(cause).or_default() += n;
        }
        for (cause, n) in &other.failed_releases {
            *self.failed_releases.entry(cause).or_default() += n;
        }
        self.grants.extend_from_slice(&other.grants);
    }

    /// Mean attempts per acquire call; `None` if the engine does not report attempts.
    pub fn attempts_per_acquire(&self) -> Option<f64> {
        (self.attempts_known > 0).then(|| self.attempts as f64 / self.attempts_known as f64)
    }
}

/// Latency percentiles in microseconds; the JSON report writes them as they are (`acquire_us`,
/// `release_us`: `p50`, `p90`, `p99`, `p999`, `max`, `mean`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest value.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

impl Percentiles {
    /// Percentiles of `h` (all zero when empty).
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        Self {
            p50: h.value_at_quantile(0.50) as f64,
            p90: h.value_at_quantile(0.90) as f64,
            p99: h.value_at_quantile(0.99) as f64,
            p999: h.value_at_quantile(0.999) as f64,
            max: h.max() as f64,
            mean: h.mean(),
        }
    }
}

/// Jain's fairness index of per-worker successes: 1.0 when all are equal, 1/n when one worker got all.
/// `None` when nobody succeeded.
pub fn jain(counts: &[u64]) -> Option<f64> {
    let sum: f64 = counts.iter().map(|&c| c as f64).sum();
    let squares: f64 = counts.iter().map(|&c| (c as f64) * (c as f64)).sum();
    (squares > 0.0).then(|| sum * sum / (counts.len() as f64 * squares))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fairness() {
        assert_eq!(jain(&[5, 5, 5, 5]), Some(1.0));
        assert_eq!(jain(&[8, 0, 0, 0]), Some(0.25));
        assert_eq!(jain(&[0, 0]), None);
        assert_eq!(jain(&[7]), Some(1.0));
    }

    #[test]
    fn merge_adds_everything() {
        let mut a = WorkerStats::default();
        a.acquire.record(100).unwrap();
        a.cycles = 1;
        a.acquire_calls = 2;
        a.attempts = 3;
        a.attempts_known = 2;
        a.failed_acquires.insert("Contended", 1);
        let mut b = a.clone();
        b.acquire.record(300).unwrap();
        a.merge(&b);
        assert_eq!(a.acquire.len(), 3);
        assert_eq!((a.cycles, a.acquire_calls, a.attempts), (2, 4, 6));
        assert_eq!(a.failed_acquires["Contended"], 2);
        assert_eq!(a.attempts_per_acquire(), Some(1.5));
        assert_eq!(WorkerStats::default().attempts_per_acquire(), None);
        let p = Percentiles::of(&a.acquire);
        assert!(p.p50 >= 99.0 && p.p50 <= 101.0 && p.max >= 299.0, "{p:?}");
    }
}
