//! One worker: pick a key, acquire, hold, release, record — until told to stop.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::engines::LockClient;
use crate::overtakes::{now_ns, Grant};
use crate::stats::WorkerStats;
use crate::units::Hold;
use crate::workload::KeyPicker;

/// Shared by a run's workers and the runner.
#[derive(Debug, Default)]
pub struct Control {
    /// Set by the runner when the time is up.
    pub stop: AtomicBool,
    /// Acquire calls left when the run is bounded by `--cycles` (`u64::MAX` otherwise).
    pub budget: AtomicU64,
    /// Successful cycles so far, for the progress bar.
    pub done: AtomicU64,
}

impl Control {
    /// A control for a time-bounded run (`budget: None`) or a call-bounded one.
    pub fn new(budget: Option<u64>) -> Arc<Self> {
        Arc::new(Self {
            stop: AtomicBool::new(false),
            budget: AtomicU64::new(budget.unwrap_or(u64::MAX)),
            done: AtomicU64::new(0),
        })
    }

    /// Takes one acquire call from the budget; false once the run should end.
    fn next(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) {
            return false;
        }
        self.budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1))
            .is_ok()
    }
}

/// What a worker needs besides the client.
#[derive(Debug, Clone)]
pub struct WorkerSetup {
    /// Key choice.
    pub picker: Arc<KeyPicker>,
    /// Hold time.
    pub hold: Hold,
    /// Names this run's keys apart from other runs' (`lg<tag>:<index>`), so leftovers cannot interfere.
    pub tag: String,
    /// RNG seed of this worker.
    pub seed: u64,
}

/// Runs the acquire-hold-release loop until `ctl` says stop; returns this worker's record.
pub async fn work<C: LockClient>(
    client: Arc<C>,
    setup: WorkerSetup,
    ctl: Arc<Control>,
) -> WorkerStats {
    let mut stats = WorkerStats::default();
    let mut rng = fastrand::Rng::with_seed(setup.seed);
    let mut resource = Vec::with_capacity(32);
    // Reserved up front so a cycle only writes three integers (it grows, rarely, past this).
    stats.grants.reserve(1 << 14);
    while ctl.next() {
        let key = setup.picker.pick(&mut rng);
        resource.clear();
        let _ = write!(resource, "lg{}:{key}", setup.tag);

        let start = Instant::now();
        let start_ns = now_ns();
        let acquired = client.acquire(&resource).await;
        stats.acquire_calls += 1;
        if let Some(attempts) = acquired.attempts {
            stats.attempts += u64::from(attempts);
            stats.attempts_known += 1;
        }
        let held = match acquired.result {
            Ok(held) => held,
            Err(cause) => {
                *stats.failed_acquires.entry(cause).or_default() += 1;
                // A failing node set can fail fast; never starve the runner's timer on one thread.
                tokio::task::yield_now().await;
                continue;
            }
        };
        stats.acquire.saturating_record(micros(start));
        stats.grants.push(Grant {
            key,
            start_ns,
            grant_ns: now_ns(),
        });

        let hold = setup.hold.sample(&mut rng);
        if !hold.is_zero() {
            tokio::time::sleep(hold).await;
        }

        let start = Instant::now();
        let released = client.release(held).await;
        stats.release.saturating_record(micros(start));
        match released {
            Ok(()) => {
                stats.cycles += 1;
                ctl.done.fetch_add(1, Ordering::Relaxed);
            }
            Err(cause) => *stats.failed_releases.entry(cause).or_default() += 1,
        }
    }
    stats
}

fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros())
        .unwrap_or(u64::MAX)
        .max(1)
}
