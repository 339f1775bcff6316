//! held: H renewed locks (`acquire_renewed`, TTL 3 s, renewed every second) held at once for a while.
//! Counts the locks lost — a false loss, since nobody else wants the keys — the renewals per second, and
//! what a renewal costs in CPU on the client and on the servers. redlock engines only: rslock has no
//! watchdog: [`super::held_rslock`] renews its locks with a loop per lock around `LockManager::extend`.
//!
//! Phases: acquire all (at most `--acquire-concurrency` in flight), hold for `--hold-for` (the measured
//! phase: CPU and renewals are deltas over it), release all (same bound).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redlock_engine::{RenewPolicy, RenewedLock, Transport};
use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::engines::cause;
use crate::engines::redlock::build;
use crate::engines::{EngineKind, RetrySpec, Waiting};
use crate::machine::loadavg;
use crate::nodes::addr::NodeUrl;
use crate::run::RunContext;

use super::args::Spec;
use super::cpu::{process_cpu, server_counters, ServerCounters};

/// One engine's held run (every figure `None` when the engine has no watchdog).
#[derive(Debug, Clone, Serialize)]
pub struct HeldRecord {
    /// Engine name.
    pub engine: &'static str,
    /// How tables name it.
    pub label: String,
    /// Locks asked for.
    pub held: usize,
    /// TTL, ms.
    pub ttl_ms: u64,
    /// Renewal interval, ms.
    pub renew_every_ms: u64,
    /// Measured hold, seconds.
    pub hold_s: f64,
    /// Whether the engine can hold renewed locks (false: raw, every figure below null).
    pub supported: bool,
    /// Why not, when unsupported.
    pub note: Option<String>,
    /// Locks won.
    pub acquired: Option<u64>,
    /// Seconds the acquiring phase took.
    pub acquire_phase_s: Option<f64>,
    /// Locks lost by the end of the acquiring phase (renewals of the first ones run meanwhile).
    pub lost_while_acquiring: Option<u64>,
    /// Locks seen lost at any time up to the end of the hold.
    pub lost: Option<u64>,
    /// Locks lost at the end of the hold (`is_lost()`); below `lost` if a late renewal brought some back.
    pub lost_at_end: Option<u64>,
    /// Locks seen lost so far, sampled each second of the hold.
    pub lost_timeline: Vec<u64>,
    /// Renewals during the hold (sum of `renewals()` deltas).
    pub renewals: Option<u64>,
    /// `renewals / hold_s`.
    pub renewals_per_s: Option<f64>,
    /// What the policy asks for: `acquired / renew_every`.
    pub expected_renewals_per_s: Option<f64>,
    /// This process's CPU over the hold, seconds (getrusage, user + system).
    pub client_cpu_s: Option<f64>,
    /// `client_cpu_s / renewals`, µs.
    pub client_cpu_us_per_renewal: Option<f64>,
    /// The servers' CPU over the hold, seconds (INFO cpu, summed over the nodes).
    pub server_cpu_s: Option<f64>,
    /// `server_cpu_s / renewals`, µs (all nodes together).
    pub server_cpu_us_per_renewal: Option<f64>,
    /// EVALSHA calls over the hold, summed over the nodes.
    pub evalsha_calls: Option<u64>,
    /// Commands over the hold, summed over the nodes.
    pub server_commands: Option<u64>,
    /// Failures by cause, `acquire:<cause>` and `release:<cause>`.
    pub failures: BTreeMap<String, u64>,
    /// Releases that returned an error.
    pub failed_releases: Option<u64>,
    /// 1-minute load average at the start and the end of the hold.
    pub loadavg: [Option<f64>; 2],
}

impl HeldRecord {
    /// Fills in the hold phase's rates: `renewals` done by `held` locks renewed every `every` during
    /// `hold`, with the client's and the servers' CPU over it. One place for both engines' figures.
    pub(super) fn record_hold(
        &mut self,
        hold: Duration,
        renewals: u64,
        held: usize,
        every: Duration,
        cpu: Duration,
        servers: ServerCounters,
    ) {
        self.hold_s = hold.as_secs_f64();
        self.renewals = Some(renewals);
        self.renewals_per_s = Some(renewals as f64 / self.hold_s);
        self.expected_renewals_per_s = Some(held as f64 / every.as_secs_f64());
        let per_renewal = |s: f64| (renewals > 0).then(|| s * 1e6 / renewals as f64);
        self.client_cpu_s = Some(cpu.as_secs_f64());
        self.client_cpu_us_per_renewal = per_renewal(cpu.as_secs_f64());
        self.server_cpu_s = Some(servers.cpu_s);
        self.server_cpu_us_per_renewal = per_renewal(servers.cpu_s);
        self.evalsha_calls = Some(servers.evalsha_calls);
        self.server_commands = Some(servers.commands);
    }

    /// A record with no figures yet.
    pub(super) fn empty(kind: EngineKind, label: String, held: usize, spec: &Spec) -> Self {
        Self {
            engine: kind.name(),
            label,
            held,
            ttl_ms: spec.held_ttl.as_millis() as u64,
            renew_every_ms: spec.renew_every.as_millis() as u64,
            hold_s: spec.hold_for.as_secs_f64(),
            supported: false,
            note: None,
            acquired: None,
            acquire_phase_s: None,
            lost_while_acquiring: None,
            lost: None,
            lost_at_end: None,
            lost_timeline: Vec::new(),
            renewals: None,
            renewals_per_s: None,
            expected_renewals_per_s: None,
            client_cpu_s: None,
            client_cpu_us_per_renewal: None,
            server_cpu_s: None,
            server_cpu_us_per_renewal: None,
            evalsha_calls: None,
            server_commands: None,
            failures: BTreeMap::new(),
            failed_releases: None,
            loadavg: [None, None],
        }
    }
}

/// Runs every held count of `spec` on `kind`: redlock engines with the watchdog, rslock with a loop per
/// lock ([`super::held_rslock`]); raw gets an n/a record, the ceiling none.
pub async fn run(
    kind: EngineKind,
    waiting: Option<Waiting>,
    ctx: &RunContext<'_>,
    nodes: &[NodeUrl],
    spec: &Spec,
    tag: &str,
) -> Result<Vec<HeldRecord>, String> {
    let label = crate::run::label(kind, waiting);
    let transport = match kind {
        EngineKind::Redlock => Transport::Pipeline,
        EngineKind::RedlockFred => Transport::Fred,
        EngineKind::Ceiling => return Ok(Vec::new()),
        EngineKind::Rslock => {
            let mut out = Vec::new();
            for (i, &count) in spec.held.iter().enumerate() {
                let record = HeldRecord::empty(kind, label.clone(), count, spec);
                let tag = format!("{tag}h{i}");
                let record = tokio::select! {
                    r = super::held_rslock::run(ctx, nodes, spec, count, &tag, record) => r?,
                    why = ctx.health.lost() => return Err(why),
                };
                if !ctx.quiet {
                    eprintln!("{}", status_line(&record));
                }
                out.push(record);
            }
            return Ok(out);
        }
        EngineKind::Raw => {
            return Ok(spec
                .held
                .iter()
                .map(|&h| HeldRecord {
                    note: Some(format!("n/a: {} has no watchdog renewal", kind.name())),
                    ..HeldRecord::empty(kind, label.clone(), h, spec)
                })
                .collect())
        }
    };
    let w = ctx.workload;
    let retry = RetrySpec {
        retries: w.retries,
        delay: w.retry_delay,
        jitter: w.retry_jitter,
    };
    let mut out = Vec::new();
    for (i, &count) in spec.held.iter().enumerate() {
        let engine = build(
            ctx.urls,
            transport,
            retry,
            waiting.unwrap_or(Waiting::Smart),
        )
        .await
        .map_err(|e| format!("{}: {e}", kind.name()))?;
        let run = Held {
            engine,
            nodes,
            spec,
            count,
            tag: format!("{tag}h{i}"),
        };
        let record = tokio::select! {
            r = run.run(HeldRecord::empty(kind, label.clone(), count, spec)) => r?,
            why = ctx.health.lost() => return Err(why),
        };
        if !ctx.quiet {
            eprintln!("{}", status_line(&record));
        }
        out.push(record);
    }
    Ok(out)
}

/// One held run.
struct Held<'a> {
    engine: redlock_engine::Redlock,
    nodes: &'a [NodeUrl],
    spec: &'a Spec,
    count: usize,
    tag: String,
}

impl Held<'_> {
    async fn run(self, mut r: HeldRecord) -> Result<HeldRecord, String> {
        let spec = self.spec;
        let gate = Arc::new(Semaphore::new(spec.acquire_concurrency));
        let started = Instant::now();
        let mut tasks = JoinSet::new();
        for i in 0..self.count {
            let (engine, gate) = (self.engine.clone(), gate.clone());
            let resource = format!("lg{}:{i}", self.tag).into_bytes();
            let (ttl, policy) = (
                spec.held_ttl,
                RenewPolicy::default().every(spec.renew_every),
            );
            tasks.spawn(async move {
                let _permit = gate.acquire_owned().await;
                engine.acquire_renewed(&resource, ttl, policy).await
            });
        }
        let mut locks: Vec<RenewedLock> = Vec::with_capacity(self.count);
        while let Some(joined) = tasks.join_next().await {
            match joined.map_err(|e| format!("an acquire task failed: {e}"))? {
                Ok(lock) => locks.push(lock),
                Err(e) => {
                    *r.failures
                        .entry(format!("acquire:{}", cause::of(&e)))
                        .or_default() += 1
                }
            }
        }
        r.supported = true;
        r.acquired = Some(locks.len() as u64);
        r.acquire_phase_s = Some(started.elapsed().as_secs_f64());
        // Lost is sticky once the watchdog says so, but `is_lost()` is also true while validity has run
        // out before a late renewal lands; a per-lock flag sampled each second keeps both kinds, at
        // one pass over the locks per second (a watcher task per lock would add its own timer
        // wake-ups to the client CPU being measured).
        let mut ever_lost = vec![false; locks.len()];
        let sample = |locks: &[RenewedLock], ever: &mut [bool]| -> u64 {
            for (seen, lock) in ever.iter_mut().zip(locks) {
                *seen |= lock.is_lost();
            }
            ever.iter().filter(|&&l| l).count() as u64
        };
        r.lost_while_acquiring = Some(sample(&locks, &mut ever_lost));

        let nodes = self.nodes.to_vec();
        let servers_before = counters(nodes.clone()).await?;
        let renewals_before: u64 = locks.iter().map(|l| u64::from(l.renewals())).sum();
        let cpu_before = process_cpu();
        r.loadavg[0] = loadavg();
        let hold_start = Instant::now();
        let mut ticker = tokio::time::interval(Duration::from_secs(1));
        ticker.tick().await;
        while hold_start.elapsed() < spec.hold_for {
            let left = spec.hold_for.saturating_sub(hold_start.elapsed());
            tokio::select! {
                _ = ticker.tick() => r.lost_timeline.push(sample(&locks, &mut ever_lost)),
                _ = tokio::time::sleep(left) => {}
            }
        }
        let hold = hold_start.elapsed();
        let cpu = process_cpu().saturating_sub(cpu_before);
        // Servers first: a renewal the servers ran but whose reply is not in yet is counted on neither
        // side; the other order would count its EVALSHA without the renewal.
        let servers = counters(nodes).await?.since(servers_before);
        let renewals = locks.iter().map(|l| u64::from(l.renewals())).sum::<u64>() - renewals_before;
        r.loadavg[1] = loadavg();
        r.lost = Some(sample(&locks, &mut ever_lost));
        r.lost_at_end = Some(locks.iter().filter(|l| l.is_lost()).count() as u64);

        r.record_hold(hold, renewals, locks.len(), spec.renew_every, cpu, servers);

        let failed = self.release_all(locks, &mut r.failures).await?;
        r.failed_releases = Some(failed);
        Ok(r)
    }

    /// Releases every lock, `--acquire-concurrency` at a time; counts the failures by cause.
    async fn release_all(
        &self,
        locks: Vec<RenewedLock>,
        failures: &mut BTreeMap<String, u64>,
    ) -> Result<u64, String> {
        let gate = Arc::new(Semaphore::new(self.spec.acquire_concurrency));
        let mut tasks = JoinSet::new();
        for lock in locks {
            let gate = gate.clone();
            tasks.spawn(async move {
                let _permit = gate.acquire_owned().await;
                lock.release().await
            });
        }
        let mut failed = 0;
        while let Some(joined) = tasks.join_next().await {
            if let Err(e) = joined.map_err(|e| format!("a release task failed: {e}"))? {
                failed += 1;
                *failures
                    .entry(format!("release:{}", cause::of(&e)))
                    .or_default() += 1;
            }
        }
        Ok(failed)
    }
}

/// The servers' counters, read on a blocking thread (the probe is a blocking client).
pub(super) async fn counters(nodes: Vec<NodeUrl>) -> Result<ServerCounters, String> {
    tokio::task::spawn_blocking(move || server_counters(&nodes))
        .await
        .map_err(|e| format!("INFO reader failed: {e}"))?
}

/// The line printed when a held run ends.
pub(super) fn status_line(r: &HeldRecord) -> String {
    let opt = |v: Option<f64>| v.map_or_else(|| "n/a".into(), |v| format!("{v:.1}"));
    format!(
        "loadgen: {:<16} held {:<8} acquired {:?}, lost {:?}, renewals/s {}, client {} µs/renewal, server {} µs/renewal, failures {:?}",
        r.label,
        r.held,
        r.acquired,
        r.lost,
        opt(r.renewals_per_s),
        opt(r.client_cpu_us_per_renewal),
        opt(r.server_cpu_us_per_renewal),
        r.failures
    )
}
