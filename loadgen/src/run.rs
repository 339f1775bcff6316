//! One engine on one scenario: connect, warm up (uncounted), measure with W workers, merge their records.
//! A node lost mid-run, a worker panic, or workers that do not stop in time end the run with an error.

use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use redlock_engine::Transport;
use tokio::task::JoinSet;

use crate::engines::raw::RawClient;
use crate::engines::redlock::RedlockClient;
use crate::engines::rslock::RslockClient;
use crate::engines::{EngineKind, LockClient, RetrySpec, Waiting};
use crate::nodes::health::Health;
use crate::stats::WorkerStats;
use crate::worker::{work, Control, WorkerSetup};
use crate::workload::{KeyPicker, Scenario, Stop, Workload};

/// What every run shares.
#[derive(Debug)]
pub struct RunContext<'a> {
    /// Node URLs.
    pub urls: &'a [String],
    /// The node watcher.
    pub health: &'a Health,
    /// The workload.
    pub workload: &'a Workload,
    /// No progress bar.
    pub quiet: bool,
}

/// A measured run's merged record.
#[derive(Debug)]
pub struct RunOutput {
    /// All workers merged.
    pub stats: WorkerStats,
    /// Successful cycles per worker (for fairness).
    pub per_worker: Vec<u64>,
    /// Successful cycles per process of a `--processes` run (empty when run in this process).
    pub per_process: Vec<u64>,
    /// From the first worker's start to the last worker's end.
    pub elapsed: Duration,
}

impl RetrySpec {
    fn of(w: &Workload) -> Self {
        Self {
            retries: w.retries,
            delay: w.retry_delay,
            jitter: w.retry_jitter,
        }
    }
}

/// What to do with a connected client: the in-process run ([`run_engine`]) or one process of a
/// `--processes` run (see [`crate::procs`]). Generic over the client, so every engine is driven by
/// monomorphized code.
pub trait Driver {
    /// The result.
    type Out;
    /// Uses `client`.
    fn drive<C: LockClient>(
        self,
        client: Arc<C>,
    ) -> impl std::future::Future<Output = Result<Self::Out, String>>;
}

/// Connects `kind` to `urls` with the workload's TTL and retry policy (and `waiting`, for redlock) and
/// hands the client to `driver`.
pub async fn with_client<D: Driver>(
    kind: EngineKind,
    urls: &[String],
    workload: &Workload,
    waiting: Option<Waiting>,
    driver: D,
) -> Result<D::Out, String> {
    let (ttl, retry) = (workload.ttl, RetrySpec::of(workload));
    let waiting = waiting.unwrap_or(Waiting::Smart);
    let named = |e: String| format!("{}: {e}", kind.name());
    match kind {
        EngineKind::Redlock => {
            let client = RedlockClient::connect(urls, Transport::Pipeline, ttl, retry, waiting)
                .await
                .map_err(named)?;
            driver.drive(Arc::new(client)).await
        }
        EngineKind::RedlockFred => {
            let client = RedlockClient::connect(urls, Transport::Fred, ttl, retry, waiting)
                .await
                .map_err(named)?;
            driver.drive(Arc::new(client)).await
        }
        EngineKind::Rslock => {
            let client = RslockClient::connect(urls, ttl, retry)
                .await
                .map_err(named)?;
            driver.drive(Arc::new(client)).await
        }
        EngineKind::Raw => {
            let client = RawClient::connect(urls, ttl, retry).await.map_err(named)?;
            driver.drive(Arc::new(client)).await
        }
        EngineKind::Ceiling => Err("ceiling is not a lock client".into()),
    }
}

/// Runs `kind` on `scenario` in this process; `tag` names this run's keys apart from the others'.
pub async fn run_engine(
    kind: EngineKind,
    waiting: Option<Waiting>,
    ctx: &RunContext<'_>,
    scenario: &Scenario,
    tag: &str,
) -> Result<RunOutput, String> {
    let driver = InProcess {
        label: label(kind, waiting),
        ctx,
        scenario,
        tag,
    };
    with_client(kind, ctx.urls, ctx.workload, waiting, driver).await
}

/// `redlock`, or `redlock[plain]` for the plain-backoff variant.
pub fn label(kind: EngineKind, waiting: Option<Waiting>) -> String {
    match waiting {
        Some(Waiting::Plain) => format!("{}[plain]", kind.name()),
        _ => kind.name().to_string(),
    }
}

struct InProcess<'a, 'b> {
    label: String,
    ctx: &'a RunContext<'b>,
    scenario: &'a Scenario,
    tag: &'a str,
}

impl Driver for InProcess<'_, '_> {
    type Out = RunOutput;

    async fn drive<C: LockClient>(self, client: Arc<C>) -> Result<RunOutput, String> {
        let Self {
            label,
            ctx,
            scenario,
            tag,
        } = self;
        let w = ctx.workload;
        let picker = Arc::new(KeyPicker::new(
            w.distribution,
            scenario.keys,
            w.zipf_exponent,
        ));
        if !w.warmup.is_zero() {
            phase(
                &client,
                ctx,
                scenario,
                &picker,
                tag,
                Stop::Duration(w.warmup),
                &mut |_, _| {},
            )
            .await?;
        }
        let bar = progress_bar(ctx.quiet, w.stop, &label, scenario);
        let stop = w.stop;
        let out = phase(
            &client,
            ctx,
            scenario,
            &picker,
            tag,
            stop,
            &mut |ctl, elapsed| {
                let calls = match stop {
                    Stop::Cycles(n) => n - ctl.budget.load(Ordering::Relaxed).min(n),
                    Stop::Duration(_) => 0,
                };
                show_progress(&bar, stop, elapsed, ctl.done.load(Ordering::Relaxed), calls);
            },
        )
        .await;
        bar.finish_and_clear();
        out
    }
}

/// Updates `bar` with the successful cycles and the acquire calls made so far.
pub fn show_progress(bar: &ProgressBar, stop: Stop, elapsed: Duration, done: u64, calls: u64) {
    let secs = elapsed.as_secs_f64();
    bar.set_message(format!("{:>9.0} cycles/s", done as f64 / secs.max(1e-3)));
    match stop {
        Stop::Duration(_) => bar.set_position(elapsed.as_millis() as u64),
        Stop::Cycles(n) => bar.set_position(calls.min(n)),
    }
}

/// The measured phase's progress bar (hidden with `--quiet`).
pub fn progress_bar(quiet: bool, stop: Stop, label: &str, scenario: &Scenario) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let (len, template) = match stop {
        Stop::Duration(d) => (
            d.as_millis() as u64,
            "{prefix:<40} [{bar:30}] {elapsed:>3} {msg}",
        ),
        Stop::Cycles(n) => (n, "{prefix:<40} [{bar:30}] {pos}/{len} {msg}"),
    };
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(template)
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_prefix(format!("{label} {}", scenario.label));
    bar
}

/// How long in-flight acquires may take to finish once a run's time is up: their retry pauses and
/// hold, plus slack.
pub fn grace(w: &Workload) -> Duration {
    (w.retry_delay + w.retry_jitter) * (w.retries + 1)
        + w.hold.max
        + w.ttl.min(Duration::from_secs(10))
        + Duration::from_secs(5)
}

/// One phase (warm-up or measured): `scenario.concurrency` workers until `stop`; `tick` is called every
/// 100 ms with the shared control and the time since the start.
pub async fn phase<C: LockClient>(
    client: &Arc<C>,
    ctx: &RunContext<'_>,
    scenario: &Scenario,
    picker: &Arc<KeyPicker>,
    tag: &str,
    stop: Stop,
    tick: &mut dyn FnMut(&Control, Duration),
) -> Result<RunOutput, String> {
    let ctl = Control::new(match stop {
        Stop::Cycles(n) => Some(n),
        Stop::Duration(_) => None,
    });
    let start = Instant::now();
    let mut workers = JoinSet::new();
    for i in 0..scenario.concurrency {
        let setup = WorkerSetup {
            picker: picker.clone(),
            hold: ctx.workload.hold,
            tag: tag.to_string(),
            seed: fastrand::u64(..) ^ i as u64,
        };
        workers.spawn(work(client.clone(), setup, ctl.clone()));
    }
    // In-flight acquires may sit in retry pauses and holds when the time is up; give them that long, plus slack.
    let grace = grace(ctx.workload);
    let finish = async {
        if let Stop::Duration(d) = stop {
            tokio::time::sleep(d).await;
            ctl.stop.store(true, Ordering::Relaxed);
        }
        let mut records = Vec::with_capacity(scenario.concurrency);
        let joined = tokio::time::timeout(grace, async {
            while let Some(joined) = workers.join_next().await {
                records.push(joined.map_err(|e| format!("a worker failed: {e}"))?);
            }
            Ok::<_, String>(())
        });
        match joined.await {
            Ok(result) => result.map(|()| records),
            Err(_) => Err(format!(
                "workers still busy {grace:?} after the run ended (a node may be hung)"
            )),
        }
    };
    let mut finish = pin!(finish);
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    let records = loop {
        tokio::select! {
            records = &mut finish => break records?,
            why = ctx.health.lost() => return Err(why),
            _ = ticker.tick() => tick(&ctl, start.elapsed()),
        }
    };
    let elapsed = start.elapsed();
    // A node that died in the last instant shows up here rather than as a trickle of failures.
    if let Some(why) = ctx.health.check() {
        return Err(why);
    }
    let mut stats = WorkerStats::default();
    for r in &records {
        stats.merge(r);
    }
    Ok(RunOutput {
        per_worker: records.iter().map(|r| r.cycles).collect(),
        per_process: Vec::new(),
        stats,
        elapsed,
    })
}
