//! burst: B acquires on distinct keys started at once, each its own tokio task, then each winner
//! releases. Nothing contends, so every failure is the engine's own (before admission control:
//! queueing delay turned into node timeouts). Measures the success rate, the time to drain (first
//! start to last finish), the goodput (successes per second of drain) against (b)'s throughput, and
//! the failures by cause.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::task::JoinSet;

use crate::engines::raw::RawClient;
use crate::engines::redlock::{builder, finish, RedlockClient};
use crate::engines::rslock::RslockClient;
use crate::engines::{EngineKind, LockClient, RetrySpec, Waiting};
use crate::machine::loadavg;
use crate::run::RunContext;
use crate::stats::{histogram, Percentiles};

use super::args::{burst_retries, Spec};

/// One engine's burst.
#[derive(Debug, Clone, Serialize)]
pub struct BurstRecord {
    /// Engine name.
    pub engine: &'static str,
    /// How tables name it (`redlock`, `redlock[plain]`).
    pub label: String,
    /// Acquires started at once.
    pub burst: usize,
    /// Acquires that won their lock.
    pub successes: u64,
    /// `successes / burst`.
    pub success_rate: f64,
    /// First task started to last task finished, seconds.
    pub drain_s: f64,
    /// `successes / drain_s`.
    pub goodput_per_s: f64,
    /// The same engine's (b) 64-worker cycles/s in this invocation.
    pub b_cycles_per_s: Option<f64>,
    /// `goodput_per_s / b_cycles_per_s`: 1 means the burst drained at the engine's steady throughput.
    pub goodput_vs_b: Option<f64>,
    /// Failures by cause, `acquire:<cause>` and `release:<cause>`.
    pub failures: BTreeMap<String, u64>,
    /// Releases that returned an error (rslock's unlock reports none: always 0 for it).
    pub failed_releases: u64,
    /// Latency of the successful acquires, µs.
    pub acquire_us: LatencyUs,
    /// Acquire timeout (the engine's; loadgen's cut-off for rslock), seconds.
    pub acquire_timeout_s: f64,
    /// Retries after the first attempt each acquire was allowed.
    pub retries: u32,
    /// 1-minute load average before and after the burst.
    pub loadavg: [Option<f64>; 2],
}

/// Latency percentiles in µs (successful calls only).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct LatencyUs {
    /// Median.
    pub p50: f64,
    /// 99th.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl From<Percentiles> for LatencyUs {
    fn from(p: Percentiles) -> Self {
        Self {
            p50: p.p50,
            p99: p.p99,
            max: p.max,
        }
    }
}

/// What one task saw.
struct Outcome {
    acquire: Result<Duration, &'static str>,
    release: Result<(), &'static str>,
}

/// Runs every burst size of `spec` on `kind`; `None` for an engine that is not a lock client.
pub async fn run(
    kind: EngineKind,
    waiting: Option<Waiting>,
    ctx: &RunContext<'_>,
    spec: &Spec,
    tag: &str,
) -> Result<Option<Vec<BurstRecord>>, String> {
    let w = ctx.workload;
    let retry = RetrySpec {
        retries: burst_retries(spec.acquire_timeout, w.retry_delay),
        delay: w.retry_delay,
        jitter: w.retry_jitter,
    };
    let named = |e: String| format!("{}: {e}", kind.name());
    let mut out = Vec::new();
    for (i, &size) in spec.bursts.iter().enumerate() {
        let tag = format!("{tag}b{i}");
        // A fresh client per burst: nothing queued or cached from the previous one.
        let record = match (kind, kind.transport()) {
            (_, Some(transport)) => {
                let b = builder(
                    ctx.urls,
                    transport,
                    retry,
                    waiting.unwrap_or(Waiting::Smart),
                )
                .acquire_timeout(spec.acquire_timeout);
                let engine = finish(b, transport).await.map_err(named)?;
                burst(RedlockClient::new(engine, w.ttl), ctx, spec, size, &tag).await?
            }
            (EngineKind::Rslock, _) => {
                let client = RslockClient::connect(ctx.urls, w.ttl, retry)
                    .await
                    .map_err(named)?;
                burst(client, ctx, spec, size, &tag).await?
            }
            (EngineKind::Raw, _) => {
                let client = RawClient::connect(ctx.urls, w.ttl, retry)
                    .await
                    .map_err(named)?;
                burst(client, ctx, spec, size, &tag).await?
            }
            // The ceiling (this project's engine always has a transport).
            _ => return Ok(None),
        };
        let record = BurstRecord {
            engine: kind.name(),
            label: crate::run::label(kind, waiting),
            retries: retry.retries,
            ..record
        };
        if !ctx.quiet {
            eprintln!("{}", status_line(&record));
        }
        out.push(record);
    }
    Ok(Some(out))
}

/// One burst of `size` tasks on `client`.
async fn burst<C: LockClient>(
    client: C,
    ctx: &RunContext<'_>,
    spec: &Spec,
    size: usize,
    tag: &str,
) -> Result<BurstRecord, String> {
    let client = Arc::new(client);
    // rslock has no acquire deadline: cut its loop off at the same bound; redlock's own deadline
    // fires first, the slack only catches a hang.
    let cut_off = spec.acquire_timeout + Duration::from_secs(5);
    let loadavg_start = loadavg();
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for i in 0..size {
        let client = client.clone();
        let resource = format!("lg{tag}:{i}").into_bytes();
        tasks.spawn(async move {
            let t = Instant::now();
            let acquired = tokio::time::timeout(cut_off, client.acquire(&resource)).await;
            let held = match acquired {
                Ok(a) => a.result,
                Err(_) => Err("Timeout(loadgen cut-off)"),
            };
            match held {
                Ok(held) => {
                    let took = t.elapsed();
                    let release = client.release(held).await;
                    Outcome {
                        acquire: Ok(took),
                        release,
                    }
                }
                Err(cause) => Outcome {
                    acquire: Err(cause),
                    release: Ok(()),
                },
            }
        });
    }
    let limit = cut_off + Duration::from_secs(60);
    let mut outcomes = Vec::with_capacity(size);
    let joined = tokio::time::timeout(limit, async {
        loop {
            tokio::select! {
                next = tasks.join_next() => match next {
                    Some(joined) => outcomes.push(joined.map_err(|e| format!("a burst task failed: {e}"))?),
                    None => return Ok::<_, String>(()),
                },
                why = ctx.health.lost() => return Err(why),
            }
        }
    });
    joined
        .await
        .map_err(|_| format!("burst of {size} not drained within {limit:?}"))??;
    let drain = start.elapsed();
    if let Some(why) = ctx.health.check() {
        return Err(why);
    }
    Ok(summarize(
        &outcomes,
        size,
        drain,
        spec,
        [loadavg_start, loadavg()],
    ))
}

fn summarize(
    outcomes: &[Outcome],
    size: usize,
    drain: Duration,
    spec: &Spec,
    loadavg: [Option<f64>; 2],
) -> BurstRecord {
    let mut failures: BTreeMap<String, u64> = BTreeMap::new();
    let mut latency = histogram();
    let (mut successes, mut failed_releases) = (0, 0);
    for o in outcomes {
        match o.acquire {
            Ok(took) => {
                successes += 1;
                latency.saturating_record(took.as_micros().max(1) as u64);
            }
            Err(cause) => *failures.entry(format!("acquire:{cause}")).or_default() += 1,
        }
        if let Err(cause) = o.release {
            failed_releases += 1;
            *failures.entry(format!("release:{cause}")).or_default() += 1;
        }
    }
    let drain_s = drain.as_secs_f64().max(1e-9);
    BurstRecord {
        engine: "",
        label: String::new(),
        burst: size,
        successes,
        success_rate: successes as f64 / size.max(1) as f64,
        drain_s,
        goodput_per_s: successes as f64 / drain_s,
        b_cycles_per_s: None,
        goodput_vs_b: None,
        failures,
        failed_releases,
        acquire_us: if successes > 0 {
            Percentiles::of(&latency).into()
        } else {
            LatencyUs::default()
        },
        acquire_timeout_s: spec.acquire_timeout.as_secs_f64(),
        retries: 0,
        loadavg,
    }
}

/// The line printed when a burst ends.
fn status_line(r: &BurstRecord) -> String {
    format!(
        "loadgen: {:<16} burst {:<8} {:>6.2}% ok, drained in {:.2}s, goodput {:.0}/s, failures {:?}",
        r.label,
        r.burst,
        r.success_rate * 100.0,
        r.drain_s,
        r.goodput_per_s,
        r.failures
    )
}
