//! The tests that install a `tracing` subscriber and a `metrics` recorder of their own, in a binary
//! of their own and one at a time: `tracing` caches each callsite's interest process-wide, so a
//! thread-local subscriber in one test races every other thread that creates or drops one (in the
//! shared `it` binary the debug events of `observe` were, now and then, not delivered at all).

// The shared test helpers still use the deprecated per-kind methods.
#![allow(deprecated)]

#[allow(unused_imports)]
#[path = "../it/common/mod.rs"]
mod common;
mod observe;
mod signals;

use std::io::Write;
use std::sync::{Arc, Mutex};

use metrics::{SharedString, Unit};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::CompositeKey;

/// Held by each test for its whole run: one subscriber and recorder at a time in this process.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One test's own metrics, as every test here sets them up: the [`SERIAL`] lock held, and a debugging
/// recorder that is this thread's (not the process's: the other modules build engines on their own
/// threads at the same time, and must not count here) while this lives. The engine registers its
/// handles when it is built, so a test builds it after this, on its own thread (`#[tokio::test]` is a
/// current-thread runtime); its rounds then record here wherever they run.
pub(crate) struct Recording {
    pub(crate) snapshotter: Snapshotter,
    _local: metrics::LocalRecorderGuard<'static>,
    _serial: tokio::sync::MutexGuard<'static, ()>,
}

impl Recording {
    pub(crate) async fn start() -> Self {
        let serial = SERIAL.lock().await;
        // Leaked, one small recorder a test: the thread's guard borrows it for the test's whole run.
        let recorder: &'static DebuggingRecorder = Box::leak(Box::new(DebuggingRecorder::new()));
        Self {
            snapshotter: recorder.snapshotter(),
            _local: metrics::set_default_local_recorder(recorder),
            _serial: serial,
        }
    }
}

/// Every metric as one snapshot read it (`Snapshotter::snapshot` reads and resets them all at once).
type Metrics = [(CompositeKey, Option<Unit>, Option<SharedString>, DebugValue)];

/// A metric's value in `snapshot`: a counter's count, a gauge's value or a histogram's number of
/// samples, summed over the label sets that have `labels`.
fn metric(snapshot: &Metrics, name: &str, labels: &[(&str, &str)]) -> f64 {
    snapshot
        .iter()
        .filter(|(key, ..)| {
            key.key().name() == name
                && labels
                    .iter()
                    .all(|(k, v)| key.key().labels().any(|l| l.key() == *k && l.value() == *v))
        })
        .map(|(.., value)| match value {
            DebugValue::Counter(c) => *c as f64,
            DebugValue::Gauge(g) => g.into_inner(),
            DebugValue::Histogram(h) => h.len() as f64,
        })
        .sum()
}

/// What a test's `tracing` subscriber wrote: a `Write` sink it can read back.
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// A subscriber that writes events up to `level` to a new sink, this thread's default until the
    /// guard drops. Returns the sink and the guard.
    pub(crate) fn install(level: tracing::Level) -> (Self, tracing::subscriber::DefaultGuard) {
        let logs = Captured::default();
        let sink = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_writer(move || sink.clone())
            .finish();
        (logs, tracing::subscriber::set_default(subscriber))
    }

    /// Everything written so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}
