//! What one invocation measured, as data: each engine's run on each scenario ([`RunRecord`]), each row
//! of the contention scenario ([`ContentionRow`]), and the whole [`Report`] with its [`Testbed`]. The files beside this one
//! compute from these and write them out.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::cli::RuntimeKind;
use crate::engines::ceiling::Ceiling;
use crate::engines::{EngineKind, Waiting};
use crate::machine::{Machine, Versions};
use crate::nodes::probe::ServerInfo;
use crate::overload::cpu::CpuUse;
use crate::overtakes::Overtakes;
use crate::stats::Percentiles;
use crate::workload::{LockKind, Scenario, Workload};

/// One engine on one scenario.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// The engine.
    pub engine: EngineKind,
    /// The scenario.
    pub scenario: Scenario,
    /// Nodes in the set.
    pub nodes: usize,
    /// Successful lock cycles.
    pub cycles: u64,
    /// Measured wall time.
    pub elapsed: Duration,
    /// Cycles per second.
    pub cycles_per_s: f64,
    /// Acquire latency (µs); `None` for the ceiling.
    pub acquire: Option<Histogram<u64>>,
    /// Release latency (µs); `None` for the ceiling.
    pub release: Option<Histogram<u64>>,
    /// Mean attempts per acquire call; `None` for the ceiling.
    pub attempts_per_acquire: Option<f64>,
    /// Failed acquire calls by cause.
    pub failed_acquires: BTreeMap<String, u64>,
    /// Failed releases by cause.
    pub failed_releases: BTreeMap<String, u64>,
    /// Jain's fairness index over per-worker successes; `None` for the ceiling.
    pub fairness: Option<f64>,
    /// The redis-benchmark figures, for the ceiling.
    pub ceiling: Option<Ceiling>,
    /// redlock's waiting mode (`None` for engines it does not apply to).
    pub waiting: Option<Waiting>,
    /// loadgen processes the workers were split among (`None` for the ceiling).
    pub processes: Option<usize>,
    /// Successful cycles of each process, when split among several.
    pub per_process: Vec<u64>,
    /// CPU of the measured phase (`None` for the ceiling).
    pub cpu: Option<CpuUse>,
    /// Overtakes among the grants (`None` for the ceiling).
    pub overtakes: Option<Overtakes>,
}

impl RunRecord {
    /// Jain's fairness index over the processes' cycle counts, when split among several.
    pub fn process_fairness(&self) -> Option<f64> {
        (self.per_process.len() > 1)
            .then(|| crate::stats::jain(&self.per_process))
            .flatten()
    }

    /// `redlock`, or `redlock[plain]` for plain backoff: how the run is named in tables and plots.
    pub fn label(&self) -> String {
        crate::run::label(self.engine, self.waiting)
    }

    /// Acquire percentiles, if measured.
    pub fn acquire_pct(&self) -> Option<Percentiles> {
        self.acquire.as_ref().map(Percentiles::of)
    }

    /// Release percentiles, if measured.
    pub fn release_pct(&self) -> Option<Percentiles> {
        self.release.as_ref().map(Percentiles::of)
    }

    /// This process's (or, with `--processes`, its children's) CPU per successful cycle, µs.
    pub fn client_cpu_us_per_cycle(&self) -> Option<f64> {
        let cpu = self.cpu?;
        (self.cycles > 0).then(|| cpu.client.as_secs_f64() * 1e6 / self.cycles as f64)
    }

    /// Commands one node ran per successful cycle (`INFO commandstats`, a script's own calls
    /// included): what a grant costs each node, whatever the node count.
    pub fn node_commands_per_grant(&self) -> Option<f64> {
        let calls = self.cpu?.server_calls?;
        (self.cycles > 0 && self.nodes > 0)
            .then(|| calls as f64 / self.nodes as f64 / self.cycles as f64)
    }

    /// The servers' CPU per successful cycle, µs (summed over the nodes).
    pub fn server_cpu_us_per_cycle(&self) -> Option<f64> {
        let server = self.cpu?.server_s?;
        (self.cycles > 0).then(|| server * 1e6 / self.cycles as f64)
    }
}

/// One row of the contention scenario: a run of one engine with one lock in one layout.
#[derive(Debug, Clone)]
pub struct ContentionRow {
    /// The lock the row took.
    pub lock: LockKind,
    /// The run; its scenario id is the layout (`1x64`, `4x16`, `16x4`).
    pub record: RunRecord,
}

impl ContentionRow {
    /// `1x64`, `4x16`, `16x4`.
    pub fn layout(&self) -> &'static str {
        self.record.scenario.id
    }

    /// loadgen processes the row's workers were split among.
    pub fn processes(&self) -> usize {
        self.record.processes.unwrap_or(1)
    }

    /// The engine as tables name it (`redlock`, `redlock[plain]`, `rslock`).
    pub fn label(&self) -> String {
        self.record.label()
    }
}

/// Where and how an invocation ran, as every loadgen document states it (the ordinary
/// [`Report`] and the election scenario's record alike).
#[derive(Debug, Clone)]
pub struct Testbed {
    /// The command line that produced it.
    pub command: String,
    /// Machine description.
    pub machine: Machine,
    /// Versions compared.
    pub versions: Versions,
    /// Every server behind the nodes, in node order: its name and version.
    pub servers: Vec<ServerInfo>,
    /// `spawned` or `existing`.
    pub node_source: &'static str,
    /// Node count.
    pub nodes: usize,
}

/// Everything one invocation measured, with its context.
#[derive(Debug, Clone)]
pub struct Report {
    /// The command line, machine, versions, servers and nodes.
    pub testbed: Testbed,
    /// The workload.
    pub workload: Workload,
    /// Runtime flavour.
    pub runtime: RuntimeKind,
    /// Engines in run order.
    pub engines: Vec<EngineKind>,
    /// Scenarios in run order.
    pub scenarios: Vec<Scenario>,
    /// Every run.
    pub runs: Vec<RunRecord>,
    /// `--processes`: loadgen processes per run (a scenario with fewer workers runs in fewer).
    pub processes: usize,
    /// `--waiting`: redlock's waiting modes, in run order.
    pub waiting: Vec<Waiting>,
    /// What differs between engines, and other caveats, one line each.
    pub notes: Vec<String>,
    /// The burst and held scenarios' records (empty for the others).
    pub overload: crate::overload::Records,
    /// The contention scenario's rows, in run order (empty for the others).
    pub contention: Vec<ContentionRow>,
}

impl Report {
    /// The run of `engine` in scenario `id`: with the engine's default waiting (`smart`) when the run
    /// has both modes.
    pub fn find(&self, id: &str, engine: EngineKind) -> Option<&RunRecord> {
        let mut of = self
            .runs
            .iter()
            .filter(|r| r.scenario.id == id && r.engine == engine);
        let first = of.clone().next();
        of.find(|r| r.waiting != Some(Waiting::Plain)).or(first)
    }

    /// The run of `engine` with waiting `mode` in scenario `id`.
    pub fn find_waiting(&self, id: &str, engine: EngineKind, mode: Waiting) -> Option<&RunRecord> {
        self.runs
            .iter()
            .find(|r| r.scenario.id == id && r.engine == engine && r.waiting == Some(mode))
    }

    /// `{label: overload ÷ (b) cycles/s}` when the overload scenario ran.
    pub fn overload_vs_b(&self) -> BTreeMap<String, f64> {
        let runs: Vec<(&str, String, f64)> = self
            .runs
            .iter()
            .map(|r| (r.scenario.id, r.label(), r.cycles_per_s))
            .collect();
        crate::overload::report::overload_vs_b(&runs)
    }
}
