//! One engine on one scenario: connect, warm up (uncounted), measure with W workers, merge their records.
//! A node lost mid-run, a worker panic, or workers that do not stop in time end the run with an error.
//!
//! [`run_with`] is the one place a run's workload is driven; the in-process run ([`run_engine`]) and each
//! process of a `--processes` run ([`crate::procs`]) differ only in their [`Stages`].

use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use tokio::task::JoinSet;

use crate::engines::raw::RawClient;
use crate::engines::redlock::RedlockClient;
use crate::engines::rslock::RslockClient;
use crate::engines::{EngineKind, LockClient, RetrySpec, Waiting};
use crate::nodes::health::Health;
use crate::overload::cpu::{CpuStart, CpuUse};
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
    /// CPU the measured phase cost, client and servers.
    pub cpu: CpuUse,
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

/// What to do with a connected client. Generic over the client, so every engine is driven by
/// monomorphized code; [`Measure`] is the one implementation.
trait Driver {
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
async fn with_client<D: Driver>(
    kind: EngineKind,
    urls: &[String],
    workload: &Workload,
    waiting: Option<Waiting>,
    driver: D,
) -> Result<D::Out, String> {
    let (ttl, retry) = (workload.ttl, RetrySpec::of(workload));
    let waiting = waiting.unwrap_or(Waiting::Smart);
    let named = |e: String| format!("{}: {e}", kind.name());
    match (kind, kind.transport()) {
        (_, Some(transport)) => {
            let client = RedlockClient::connect(urls, transport, ttl, retry, waiting)
                .await
                .map_err(named)?
                .taking(workload.lock);
            driver.drive(Arc::new(client)).await
        }
        (EngineKind::Rslock, _) => {
            let client = RslockClient::connect(urls, ttl, retry)
                .await
                .map_err(named)?;
            driver.drive(Arc::new(client)).await
        }
        (EngineKind::Raw, _) => {
            let client = RawClient::connect(urls, ttl, retry).await.map_err(named)?;
            driver.drive(Arc::new(client)).await
        }
        // The ceiling (this project's engine always has a transport).
        _ => Err("ceiling is not a lock client".into()),
    }
}

/// What differs between the two ways a run is driven: in this process ([`run_engine`]) or as one
/// process of a `--processes` run (see [`crate::procs`]). The workload itself (key picker, warm-up,
/// measured phase, records) is [`run_with`]'s alone, so both measure exactly the same loop; only what
/// happens between the phases and on the measured phase's ticks differs.
pub trait Stages {
    /// Once connected, before the warm-up (a child process waits here for the parent's start barrier).
    fn connected(&mut self) -> impl std::future::Future<Output = Result<(), String>>;
    /// After the warm-up, before measuring (the second barrier; the in-process run shows its bar).
    fn warmed(&mut self) -> impl std::future::Future<Output = Result<(), String>>;
    /// Every 100 ms of the measured phase, with the shared control and the time since its start.
    fn tick(&mut self, ctl: &Control, elapsed: Duration);
    /// After the measured phase, whether it succeeded or not.
    fn finished(&mut self) {}
}

/// Connects `kind` and drives one run on `scenario`: warm-up (uncounted), then the measured phase, with
/// `stages` called between them. `tag` names this run's keys apart from the others'.
pub async fn run_with<S: Stages>(
    kind: EngineKind,
    waiting: Option<Waiting>,
    ctx: &RunContext<'_>,
    scenario: &Scenario,
    tag: &str,
    stages: S,
) -> Result<RunOutput, String> {
    let measure = Measure {
        ctx,
        scenario,
        tag,
        stages,
    };
    with_client(kind, ctx.urls, ctx.workload, waiting, measure).await
}

/// [`run_with`]'s body once the client is connected.
struct Measure<'a, 'b, S> {
    ctx: &'a RunContext<'b>,
    scenario: &'a Scenario,
    tag: &'a str,
    stages: S,
}

impl<S: Stages> Driver for Measure<'_, '_, S> {
    type Out = RunOutput;

    async fn drive<C: LockClient>(self, client: Arc<C>) -> Result<RunOutput, String> {
        let Self {
            ctx,
            scenario,
            tag,
            mut stages,
        } = self;
        let w = ctx.workload;
        // One picker for both phases: the zipf sampler's setup is paid once.
        let picker = Arc::new(KeyPicker::new(
            w.distribution,
            scenario.keys,
            w.zipf_exponent,
        ));
        stages.connected().await?;
        if !w.warmup.is_zero() {
            let warmup = Stop::Duration(w.warmup);
            phase(&client, ctx, scenario, &picker, tag, warmup, &mut |_, _| {}).await?;
        }
        stages.warmed().await?;
        // Both sides' CPU over the measured phase alone: connecting and warming up are not a cycle's.
        let cpu = CpuStart::now(ctx.urls).await;
        let out = phase(
            &client,
            ctx,
            scenario,
            &picker,
            tag,
            w.stop,
            &mut |ctl, elapsed| stages.tick(ctl, elapsed),
        )
        .await;
        let cpu = cpu.finish(ctx.urls).await;
        stages.finished();
        out.map(|out| RunOutput { cpu, ..out })
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
    let stages = InProcess {
        label: label(kind, waiting),
        quiet: ctx.quiet,
        stop: ctx.workload.stop,
        scenario,
        bar: None,
    };
    run_with(kind, waiting, ctx, scenario, tag, stages).await
}

/// `redlock`, or `redlock[plain]` for the plain-backoff variant.
pub fn label(kind: EngineKind, waiting: Option<Waiting>) -> String {
    match waiting {
        Some(Waiting::Plain) => format!("{}[plain]", kind.name()),
        _ => kind.name().to_string(),
    }
}

/// The in-process run's stages: no barriers, a progress bar over the measured phase.
struct InProcess<'a> {
    label: String,
    quiet: bool,
    stop: Stop,
    scenario: &'a Scenario,
    /// Made once the warm-up is over, so its clock starts with the measured phase.
    bar: Option<ProgressBar>,
}

impl Stages for InProcess<'_> {
    async fn connected(&mut self) -> Result<(), String> {
        Ok(())
    }

    async fn warmed(&mut self) -> Result<(), String> {
        self.bar = Some(progress_bar(
            self.quiet,
            self.stop,
            &self.label,
            self.scenario,
        ));
        Ok(())
    }

    fn tick(&mut self, ctl: &Control, elapsed: Duration) {
        let Some(bar) = &self.bar else { return };
        // Acquire calls made so far: what a --cycles budget counts down.
        let calls = match self.stop {
            Stop::Cycles(n) => n - ctl.budget.load(Ordering::Relaxed).min(n),
            Stop::Duration(_) => 0,
        };
        let done = ctl.done.load(Ordering::Relaxed);
        show_progress(bar, self.stop, elapsed, done, calls);
    }

    fn finished(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
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
async fn phase<C: LockClient>(
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
        cpu: CpuUse::default(),
    })
}
