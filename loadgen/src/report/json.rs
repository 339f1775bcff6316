//! The `--json` document. These structs are its schema; these key names in [`Document`] and [`Run`]
//! are a contract: `machine`, `versions`, `config`, `runs[].engine`, `nodes`, `concurrency`, `keys`,
//! `hold_us`, `cycles`, `cycles_per_s`, `acquire_us`, `release_us`, `attempts_per_acquire`,
//! `failed_acquires`, `fairness`, `ratios`; the others may grow.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cli::RuntimeKind;
use crate::engines::Waiting;
use crate::machine::{Machine, Versions};
use crate::nodes::probe::ServerInfo;
use crate::overload::burst::BurstRecord;
use crate::overload::held::HeldRecord;
use crate::stats::Percentiles;
use crate::workload::{Distribution, Stop};

use super::contention::{self, compare, vs_one_process, Compare};
use super::ratios::{goals, ratios, Goal};
use super::record::{ContentionRow, Report, RunRecord};

/// The whole document.
#[derive(Debug, Serialize)]
pub struct Document<'a> {
    /// Machine description.
    pub machine: &'a Machine,
    /// Versions compared.
    pub versions: &'a Versions,
    /// Every server behind the nodes, in node order (a cluster's members, a Sentinel's master):
    /// `{node, server_name, server_version}` from its `INFO server`.
    pub servers: Vec<ServerOut>,
    /// What was run.
    pub config: Config,
    /// One entry per engine and scenario, in run order.
    pub runs: Vec<Run>,
    /// `{scenario: {"redlock/<engine>": {cycles_per_s, acquire_p50, acquire_p99}}}`.
    pub ratios: BTreeMap<&'static str, BTreeMap<String, RatioOut>>,
    /// The goals with the measured value.
    pub goals: Vec<GoalOut>,
    /// Caveats, one line each.
    pub notes: &'a [String],
    /// `--scenario burst`: one entry per engine and burst size (absent for other scenarios).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub burst: &'a [BurstRecord],
    /// `--scenario held`: one entry per engine and held count (absent for other scenarios).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub held: &'a [HeldRecord],
    /// `--scenario contention`: rows, ratios, goals (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contention: Option<ContentionOut>,
    /// `--scenario overload`: `{label: overload cycles/s ÷ (b) cycles/s}` (absent for other scenarios).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub overload_vs_b: BTreeMap<String, f64>,
}

/// One server, from its `INFO server`.
#[derive(Debug, Serialize)]
pub struct ServerOut {
    /// Its URL, password redacted.
    pub node: String,
    /// `server_name` (`valkey`), else `redis`; `unknown` when `INFO` was refused.
    pub server_name: String,
    /// `valkey_version` on Valkey, else `redis_version`.
    pub server_version: String,
}

/// Every server as the documents list them (this one and the election scenario's).
pub fn servers_out(servers: &[ServerInfo]) -> Vec<ServerOut> {
    servers
        .iter()
        .map(|s| ServerOut {
            node: s.node.clone(),
            server_name: s.name.clone(),
            server_version: s.version.clone(),
        })
        .collect()
}

/// The run configuration.
#[derive(Debug, Serialize)]
pub struct Config {
    /// The command line.
    pub command: String,
    /// Node count.
    pub nodes: usize,
    /// `spawned` or `existing`.
    pub node_source: &'static str,
    /// Engines in run order.
    pub engines: Vec<&'static str>,
    /// Scenarios: `{id, label, concurrency, keys}`.
    pub scenarios: Vec<ScenarioOut>,
    /// Key distribution.
    pub distribution: Distribution,
    /// Zipf exponent (used with `zipf`).
    pub zipf_exponent: f64,
    /// Hold range in µs.
    pub hold_us: [u64; 2],
    /// Lock TTL.
    pub ttl_ms: u64,
    /// Attempts after the first.
    pub retries: u32,
    /// Base pause between attempts.
    pub retry_delay_ms: f64,
    /// Extra random pause.
    pub retry_jitter_ms: f64,
    /// Measured seconds per run (time-bounded runs).
    pub duration_s: Option<f64>,
    /// Acquire calls per run (call-bounded runs).
    pub cycles: Option<u64>,
    /// Uncounted warm-up per run.
    pub warmup_s: f64,
    /// Tokio runtime flavour.
    pub runtime: RuntimeKind,
    /// `--processes`: loadgen processes per run, the workers split among them.
    pub processes: usize,
    /// `--waiting`: redlock's waiting modes, in run order.
    pub waiting: Vec<Waiting>,
}

/// A scenario.
#[derive(Debug, Serialize)]
pub struct ScenarioOut {
    /// `a`, `b`, `c` or `custom`.
    pub id: &'static str,
    /// Description.
    pub label: String,
    /// Workers.
    pub concurrency: usize,
    /// Keys.
    pub keys: u64,
}

/// One run.
#[derive(Debug, Serialize)]
pub struct Run {
    /// Engine name.
    pub engine: &'static str,
    /// How the tables name the run: the engine, or `redlock[plain]`.
    pub label: String,
    /// redlock's waiting mode, `smart` or `plain` (null for other engines).
    pub waiting: Option<Waiting>,
    /// loadgen processes the run's workers were split among (null for the ceiling).
    pub processes: Option<usize>,
    /// Scenario id.
    pub scenario: &'static str,
    /// Node count.
    pub nodes: usize,
    /// Workers.
    pub concurrency: usize,
    /// Keys.
    pub keys: u64,
    /// Mean hold in µs.
    pub hold_us: u64,
    /// Successful lock cycles.
    pub cycles: u64,
    /// Measured seconds.
    pub elapsed_s: f64,
    /// Cycles per second.
    pub cycles_per_s: f64,
    /// Ceiling only: the native ceiling's cycles per second (`SET NX PX`, then `DELIFEQ`; null when
    /// not every node accepts `DELIFEQ`); absent for other engines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub native_cycles_per_s: Option<Option<f64>>,
    /// Acquire latency, first attempt to success (null for the ceiling).
    pub acquire_us: Option<Percentiles>,
    /// Release latency (null for the ceiling).
    pub release_us: Option<Percentiles>,
    /// Mean attempts per acquire call (null for the ceiling).
    pub attempts_per_acquire: Option<f64>,
    /// Failed acquire calls by cause (the engine's error variant name).
    pub failed_acquires: BTreeMap<String, u64>,
    /// Failed releases by cause.
    pub failed_releases: BTreeMap<String, u64>,
    /// Jain's fairness index over per-worker successful cycles (null for the ceiling); with
    /// `--processes`, over every worker of every process.
    pub fairness: Option<f64>,
    /// Successful cycles of each process (null unless split among several).
    pub per_process_cycles: Option<Vec<u64>>,
    /// Jain's fairness index over `per_process_cycles` (null unless split among several).
    pub process_fairness: Option<f64>,
    /// The most waiters of one key that started after a grant's waiter and were granted before it,
    /// over every grant of every process (null for the ceiling; see `crate::overtakes`).
    pub max_overtakes: Option<u64>,
    /// Those overtakes summed over the grants, per grant (null for the ceiling).
    pub overtakes_per_grant: Option<f64>,
    /// CPU of loadgen's process (with `--processes`: its children's, summed) over the measured phase
    /// per successful cycle, µs: the engine plus loadgen's own loop, which is the same for every engine
    /// (null for the ceiling).
    pub client_cpu_us_per_cycle: Option<f64>,
    /// The servers' CPU (`INFO cpu`, user + system, summed over the nodes) over the measured phase per
    /// successful cycle, µs (null for the ceiling, or when `INFO` could not be read).
    pub server_cpu_us_per_cycle: Option<f64>,
    /// Commands one node ran per successful cycle over the measured phase (`INFO commandstats`,
    /// scripts' own calls included; null for the ceiling, or when `INFO` could not be read).
    pub node_commands_per_grant: Option<f64>,
    /// redis-benchmark figures (ceiling only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<CeilingOut>,
}

/// The ceiling's inputs.
#[derive(Debug, Serialize)]
pub struct CeilingOut {
    /// SET NX PX ops/s summed over the nodes.
    pub set_ops_per_s: f64,
    /// Release-script ops/s summed over the nodes.
    pub release_ops_per_s: f64,
    /// `DELIFEQ` ops/s summed over the nodes (null when not every node accepts it).
    pub delifeq_ops_per_s: Option<f64>,
    /// redis-benchmark connections per node.
    pub clients: usize,
    /// Pipeline depth.
    pub pipeline: usize,
}

/// One ratio.
#[derive(Debug, Serialize)]
pub struct RatioOut {
    /// redlock ÷ other, cycles/s (above 1: redlock faster).
    pub cycles_per_s: Option<f64>,
    /// redlock ÷ other, acquire p50 (below 1: redlock faster).
    pub acquire_p50: Option<f64>,
    /// redlock ÷ other, acquire p99.
    pub acquire_p99: Option<f64>,
    /// redlock ÷ other, Jain's fairness (above 1: fairer).
    pub fairness: Option<f64>,
}

/// One goal.
#[derive(Debug, Serialize)]
pub struct GoalOut {
    /// Scenario id.
    pub scenario: &'static str,
    /// What is compared.
    pub what: &'static str,
    /// `>= 2.3`.
    pub target: String,
    /// Measured value.
    pub measured: Option<f64>,
    /// Whether it was met (null: not measured).
    pub met: Option<bool>,
}

impl From<Goal> for GoalOut {
    fn from(g: Goal) -> Self {
        Self {
            scenario: g.scenario,
            what: g.what,
            target: format!("{} {}", g.op, g.target),
            measured: g.measured,
            met: g.met(),
        }
    }
}

/// Builds the document.
pub fn document(report: &Report) -> Document<'_> {
    let w = &report.workload;
    let config = Config {
        command: report.testbed.command.clone(),
        nodes: report.testbed.nodes,
        node_source: report.testbed.node_source,
        engines: report.engines.iter().map(|e| e.name()).collect(),
        scenarios: report
            .scenarios
            .iter()
            .map(|s| ScenarioOut {
                id: s.id,
                label: s.label.clone(),
                concurrency: s.concurrency,
                keys: s.keys,
            })
            .collect(),
        distribution: w.distribution,
        zipf_exponent: w.zipf_exponent,
        hold_us: [w.hold.min.as_micros() as u64, w.hold.max.as_micros() as u64],
        ttl_ms: w.ttl.as_millis() as u64,
        retries: w.retries,
        retry_delay_ms: w.retry_delay.as_secs_f64() * 1e3,
        retry_jitter_ms: w.retry_jitter.as_secs_f64() * 1e3,
        duration_s: match w.stop {
            Stop::Duration(d) => Some(d.as_secs_f64()),
            Stop::Cycles(_) => None,
        },
        cycles: match w.stop {
            Stop::Cycles(n) => Some(n),
            Stop::Duration(_) => None,
        },
        warmup_s: w.warmup.as_secs_f64(),
        runtime: report.runtime,
        processes: report.processes,
        waiting: report.waiting.clone(),
    };
    let runs = report
        .runs
        .iter()
        .map(|r| run_out(r, w.hold.mean_us()))
        .collect();
    let mut by_scenario: BTreeMap<&'static str, BTreeMap<String, RatioOut>> = BTreeMap::new();
    for r in ratios(report) {
        let out = RatioOut {
            cycles_per_s: r.cycles_per_s,
            acquire_p50: r.acquire_p50,
            acquire_p99: r.acquire_p99,
            fairness: r.fairness,
        };
        by_scenario
            .entry(r.scenario)
            .or_default()
            .insert(r.name(), out);
    }
    let goals = goals(report).into_iter().map(GoalOut::from).collect();
    Document {
        machine: &report.testbed.machine,
        versions: &report.testbed.versions,
        servers: servers_out(&report.testbed.servers),
        config,
        runs,
        ratios: by_scenario,
        goals,
        notes: &report.notes,
        burst: &report.overload.burst,
        held: &report.overload.held,
        overload_vs_b: report.overload_vs_b(),
        contention: contention_out(&report.contention, w.hold.mean_us()),
    }
}

/// One run's entry, `hold_us` its workload's mean hold (the contention scenario's rows use it too).
pub fn run_out(r: &RunRecord, hold_us: u64) -> Run {
    Run {
        engine: r.engine.name(),
        label: r.label(),
        waiting: r.waiting,
        processes: r.processes,
        scenario: r.scenario.id,
        nodes: r.nodes,
        concurrency: r.scenario.concurrency,
        keys: r.scenario.keys,
        hold_us,
        cycles: r.cycles,
        elapsed_s: r.elapsed.as_secs_f64(),
        cycles_per_s: r.cycles_per_s,
        native_cycles_per_s: r.ceiling.as_ref().map(|c| c.native.map(|n| n.cycles_per_s)),
        acquire_us: r.acquire_pct(),
        release_us: r.release_pct(),
        attempts_per_acquire: r.attempts_per_acquire,
        failed_acquires: r.failed_acquires.clone(),
        failed_releases: r.failed_releases.clone(),
        fairness: r.fairness,
        per_process_cycles: (r.per_process.len() > 1).then(|| r.per_process.clone()),
        process_fairness: r.process_fairness(),
        max_overtakes: r.overtakes.map(|o| o.max),
        overtakes_per_grant: r.overtakes.map(|o| o.per_grant),
        client_cpu_us_per_cycle: r.client_cpu_us_per_cycle(),
        server_cpu_us_per_cycle: r.server_cpu_us_per_cycle(),
        node_commands_per_grant: r.node_commands_per_grant(),
        ceiling: r.ceiling.as_ref().map(|c| CeilingOut {
            set_ops_per_s: c.set_ops_per_s,
            release_ops_per_s: c.release_ops_per_s,
            delifeq_ops_per_s: c.native.map(|n| n.delifeq_ops_per_s),
            clients: c.clients,
            pipeline: crate::engines::ceiling::PIPELINE,
        }),
    }
}

/// The document's `contention` part.
#[derive(Debug, Serialize)]
pub struct ContentionOut {
    /// Every row, in run order (layout, then lock, then engine).
    pub rows: Vec<ContentionRowOut>,
    /// The same-run ratios.
    pub ratios: Vec<Compare>,
    /// The regression targets with the measured value (`scenario` is the layout).
    pub goals: Vec<GoalOut>,
}

/// One row: a `runs[]` entry (its `scenario` is the layout) plus what the contention table adds.
#[derive(Debug, Serialize)]
pub struct ContentionRowOut {
    /// `1x64`, `4x16` or `16x4`: processes x workers per process.
    pub layout: &'static str,
    /// `exclusive` (`acquire`) or `fair` (`acquire_fair`).
    pub lock: String,
    /// Workers per process.
    pub workers_per_process: usize,
    /// cycles/s ÷ the same engine's exclusive lock in one process (null when that row is missing).
    pub vs_one_process: Option<f64>,
    /// Every field of a `runs[]` entry: `cycles_per_s`, `acquire_us` (with `p999`), `fairness`,
    /// `process_fairness`, `max_overtakes`, `overtakes_per_grant`, `server_cpu_us_per_cycle`,
    /// `client_cpu_us_per_cycle`, …
    #[serde(flatten)]
    pub run: Run,
}

/// Builds the `contention` part (`None` without rows); `hold_us` is the workload's mean hold.
pub fn contention_out(rows: &[ContentionRow], hold_us: u64) -> Option<ContentionOut> {
    if rows.is_empty() {
        return None;
    }
    Some(ContentionOut {
        rows: rows
            .iter()
            .map(|r| ContentionRowOut {
                layout: r.layout(),
                lock: r.lock.to_string(),
                workers_per_process: r.record.scenario.concurrency / r.processes().max(1),
                vs_one_process: vs_one_process(rows, r),
                run: run_out(&r.record, hold_us),
            })
            .collect(),
        ratios: compare(rows),
        goals: contention::goals(rows)
            .into_iter()
            .map(GoalOut::from)
            .collect(),
    })
}

/// The document as pretty-printed JSON.
pub fn render(report: &Report) -> String {
    serde_json::to_string_pretty(&document(report)).expect("the document serializes") + "\n"
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
