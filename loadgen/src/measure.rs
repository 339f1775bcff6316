//! One measured run as a [`RunRecord`]: one engine (and waiting mode) on one scenario, in this process
//! or split over P loadgen processes ([`crate::procs`]), and the status line printed after it. The
//! scenario loop of [`crate::session`] and the contention scenario ([`crate::contention`]) both measure
//! through [`measure`], so a row of either is made the same way.

use crate::cli::RuntimeKind;
use crate::engines::{EngineKind, Waiting};
use crate::report::{group, micros, RunRecord};
use crate::run::{label, run_engine, RunContext};
use crate::stats::jain;
use crate::workload::Scenario;

/// Where and how one run goes.
#[derive(Debug, Clone, Copy)]
pub struct RunSpec<'a> {
    /// The engine.
    pub engine: EngineKind,
    /// Its waiting mode (`None` for engines without one).
    pub waiting: Option<Waiting>,
    /// The scenario (workers and keys).
    pub scenario: &'a Scenario,
    /// Names this run's keys apart from the other runs' (`01`, `c03`).
    pub tag: &'a str,
    /// loadgen processes the workers are split among (1: tasks of this process).
    pub processes: usize,
    /// The runtime flavour of the worker processes.
    pub runtime: RuntimeKind,
    /// Nodes in the set (for the record).
    pub nodes: usize,
}

/// Runs `spec` with the workload of `ctx` and returns its record.
pub async fn measure(spec: RunSpec<'_>, ctx: &RunContext<'_>) -> Result<RunRecord, String> {
    let RunSpec {
        engine,
        waiting,
        scenario,
        tag,
        processes,
        runtime,
        nodes,
    } = spec;
    let mut out = if processes > 1 {
        crate::procs::run_processes(
            engine,
            waiting,
            ctx,
            runtime,
            scenario,
            tag,
            processes,
            &label(engine, waiting),
        )
        .await
        .map_err(|e| format!("{}: {e}", label(engine, waiting)))?
    } else {
        run_engine(engine, waiting, ctx, scenario, tag).await?
    };
    let causes = |m: &std::collections::BTreeMap<&'static str, u64>| {
        m.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    };
    Ok(RunRecord {
        engine,
        waiting,
        processes: Some(processes),
        scenario: scenario.clone(),
        nodes,
        cycles: out.stats.cycles,
        elapsed: out.elapsed,
        cycles_per_s: out.stats.cycles as f64 / out.elapsed.as_secs_f64().max(1e-9),
        attempts_per_acquire: out.stats.attempts_per_acquire(),
        failed_acquires: causes(&out.stats.failed_acquires),
        failed_releases: causes(&out.stats.failed_releases),
        fairness: jain(&out.per_worker),
        overtakes: Some(crate::overtakes::count(&mut out.stats.grants)),
        per_process: out.per_process,
        acquire: Some(out.stats.acquire),
        release: Some(out.stats.release),
        ceiling: None,
        cpu: Some(out.cpu),
    })
}

/// The line printed on stderr after each run: label, scenario, cycles/s, p50/p99, fairness.
pub fn status_line(r: &RunRecord) -> String {
    let lat = r.acquire_pct().map_or_else(String::new, |p| {
        format!("  acquire p50 {} p99 {}", micros(p.p50), micros(p.p99))
    });
    let mut fair = r
        .fairness
        .map_or_else(String::new, |f| format!("  fairness {f:.3}"));
    if let Some(f) = r.process_fairness() {
        fair.push_str(&format!(" (processes {f:.3})"));
    }
    let procs = match r.processes {
        Some(p) if p > 1 => format!(" x{p} proc"),
        _ => String::new(),
    };
    let native = r
        .ceiling
        .as_ref()
        .and_then(|c| c.native)
        .map_or_else(String::new, |n| {
            format!("  (native DELIFEQ: {} cycles/s)", group(n.cycles_per_s))
        });
    format!(
        "loadgen: {:<16} {:<34} {:>10} cycles/s{lat}{fair}{native}",
        r.label(),
        format!("{}{procs}", r.scenario.label),
        group(r.cycles_per_s)
    )
}
