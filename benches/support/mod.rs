//! What the benches share: [`e2e`], the end-to-end benches' engine and lock cycle; and here, what the
//! benches install to measure observability's cost (`benches/observe.rs`, `e2e_observe` in
//! `benches/e2e.rs`): a minimal metrics recorder and a `tracing` subscriber that formats to `io::sink`.
//! Both are installed scoped (`metrics::with_local_recorder`, `tracing::subscriber::with_default`):
//! global ones can be set only once per process, and the "nothing installed" runs share the process.
//!
//! In a subdirectory so that cargo does not take it for a bench target of its own.
#![allow(dead_code)]

pub mod e2e;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use tracing::Level;

/// The cheapest recorder that still stores what it is given: a counter is an `AtomicU64` and a histogram
/// a count and a sum. Real exporters do more per sample (Prometheus' pushes into a bucket), so this is a
/// lower bound on a recorder's cost: the facade's dispatch through the handle plus one or two atomic adds.
///
/// Not `metrics-util`'s `DebuggingRecorder`: its histograms keep every sample, and a benchmark records
/// tens of millions of them.
#[derive(Debug, Default)]
pub struct AtomicRecorder;

/// A histogram as a count and a sum (in nanoseconds: the engine records seconds as `f64`).
#[derive(Debug, Default)]
struct Summary {
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl HistogramFn for Summary {
    fn record(&self, value: f64) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_nanos
            .fetch_add((value * 1e9) as u64, Ordering::Relaxed);
    }
}

impl Recorder for AtomicRecorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(AtomicU64::new(0)))
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(Arc::new(AtomicU64::new(0)))
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(Arc::new(Summary::default()))
    }
}

/// `tracing-subscriber`'s default `fmt` subscriber at `level`, writing to `io::sink`: at `DEBUG` every
/// round event is formatted in full (timestamp, level, fields) and thrown away; at `INFO` (a common
/// production level) the engine's `debug!` events are filtered out.
pub fn subscriber(level: Level) -> impl tracing::Subscriber + Send + Sync + 'static {
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::sink)
        .finish()
}
