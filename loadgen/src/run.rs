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
use crate::engines::{EngineKind, LockClient, RetrySpec};
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

/// Runs `kind` on `scenario`; `tag` names this run's keys apart from the others'.
pub async fn run_engine(
    kind: EngineKind,
    ctx: &RunContext<'_>,
    scenario: &Scenario,
    tag: &str,
) -> Result<RunOutput, String> {
    let (urls, ttl, retry) = (ctx.urls, ctx.workload.ttl, RetrySpec::of(ctx.workload));
    let named = |e: String| format!("{}: {e}", kind.name());
    match kind {
        EngineKind::Redlock => {
            let client = RedlockClient::connect(urls, Transport::Pipeline, ttl, retry)
                .await
                .map_err(named)?;
            drive(Arc::new(client), kind, ctx, scenario, tag).await
        }
        EngineKind::RedlockFred => {
            let client = RedlockClient::connect(urls, Transport::Fred, ttl, retry)
                .await
                .map_err(named)?;
            drive(Arc::new(client), kind, ctx, scenario, tag).await
        }
        EngineKind::Rslock => {
            let client = RslockClient::connect(urls, ttl, retry)
                .await
                .map_err(named)?;
            drive(Arc::new(client), kind, ctx, scenario, tag).await
        }
        EngineKind::Raw => {
            let client = RawClient::connect(urls, ttl, retry).await.map_err(named)?;
            drive(Arc::new(client), kind, ctx, scenario, tag).await
        }
        EngineKind::Ceiling => Err("ceiling is not a lock client".into()),
    }
}

async fn drive<C: LockClient>(
    client: Arc<C>,
    kind: EngineKind,
    ctx: &RunContext<'_>,
    scenario: &Scenario,
    tag: &str,
) -> Result<RunOutput, String> {
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
            None,
        )
        .await?;
    }
    let bar = progress_bar(ctx, kind, scenario);
    let out = phase(&client, ctx, scenario, &picker, tag, w.stop, Some(&bar)).await;
    bar.finish_and_clear();
    out
}

fn progress_bar(ctx: &RunContext<'_>, kind: EngineKind, scenario: &Scenario) -> ProgressBar {
    if ctx.quiet {
        return ProgressBar::hidden();
    }
    let (len, template) = match ctx.workload.stop {
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
    bar.set_prefix(format!("{} {}", kind.name(), scenario.label));
    bar
}

async fn phase<C: LockClient>(
    client: &Arc<C>,
    ctx: &RunContext<'_>,
    scenario: &Scenario,
    picker: &Arc<KeyPicker>,
    tag: &str,
    stop: Stop,
    bar: Option<&ProgressBar>,
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
    let w = ctx.workload;
    let grace = (w.retry_delay + w.retry_jitter) * (w.retries + 1)
        + w.hold.max
        + w.ttl.min(Duration::from_secs(10))
        + Duration::from_secs(5);
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
            _ = ticker.tick() => if let Some(bar) = bar {
                let secs = start.elapsed().as_secs_f64();
                let done = ctl.done.load(Ordering::Relaxed);
                bar.set_message(format!("{:>9.0} cycles/s", done as f64 / secs.max(1e-3)));
                match stop {
                    Stop::Duration(_) => bar.set_position(start.elapsed().as_millis() as u64),
                    Stop::Cycles(n) => bar.set_position(n - ctl.budget.load(Ordering::Relaxed).min(n)),
                }
            },
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
        stats,
        elapsed,
    })
}
