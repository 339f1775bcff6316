//! The results of a whole invocation and every way they are written out.
//!
//! - [`ratios`]: redlock against each other engine, per scenario; the goals, checked.
//! - [`table`]: the text table on stdout.
//! - [`json`]: the `--json` document (its schema is the structs in that file; its contract test in
//!   `json_tests`).
//! - [`markdown`]: the `--out` summary.
//! - [`svg`]: the `--out` latency-percentile plot.
//! - [`contention`]: the contention scenario's rows, ratios, goals, table and JSON part (issue 29).
//! - `sample` (tests only): a small report with made-up numbers, for the renderers' tests.

pub mod contention;
pub mod json;
pub mod markdown;
pub mod ratios;
pub mod svg;
pub mod table;

#[cfg(test)]
mod sample;
#[cfg(test)]
pub(crate) use sample::sample;

use std::collections::BTreeMap;
use std::path::Path;
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
use crate::workload::{Scenario, Workload};

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

/// Everything one invocation measured, with its context.
#[derive(Debug, Clone)]
pub struct Report {
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
    pub contention: Vec<contention::ContentionRow>,
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

    /// Writes the Markdown summary, the SVG plot and the JSON document into `dir`.
    pub fn write_dir(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        write(
            &dir.join("summary.md"),
            &markdown::render(self, "latency.svg"),
        )?;
        write(&dir.join("latency.svg"), &svg::render(self))?;
        Ok(())
    }

    /// Writes the JSON document to `path`.
    pub fn write_json(&self, path: &Path) -> Result<(), String> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        write(path, &json::render(self))
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `" in 4 processes"` when the scenario's runs were split among processes, else empty.
pub fn in_processes(report: &Report, scenario: &Scenario) -> String {
    let most = report
        .runs
        .iter()
        .filter(|r| r.scenario.id == scenario.id)
        .filter_map(|r| r.processes)
        .max()
        .unwrap_or(1);
    if most > 1 {
        format!(" in {most} processes")
    } else {
        String::new()
    }
}

/// `1234567.8` as `1 234 568`-style text with thin grouping (`1,234,568`).
pub fn group(n: f64) -> String {
    let s = format!("{:.0}", n.max(0.0));
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Microseconds as `850µs`, `1.23ms`, `2.50s`.
pub fn micros(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.0}µs")
    } else if us < 1_000_000.0 {
        format!("{:.2}ms", us / 1_000.0)
    } else {
        format!("{:.2}s", us / 1_000_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_and_goals_from_the_sample() {
        let r = sample();
        let all = ratios::ratios(&r);
        let b = all
            .iter()
            .find(|x| x.scenario == "b" && x.versus == EngineKind::Rslock)
            .unwrap();
        assert!((b.cycles_per_s.unwrap() - 3.0).abs() < 1e-9);
        assert!(b.acquire_p50.unwrap() < 0.5);
        let goals = ratios::goals(&r);
        assert_eq!(goals.len(), 7);
        let fair = goals.iter().find(|g| g.what == "fairness redlock").unwrap();
        assert_eq!(fair.met(), Some(true));
        let ceiling = goals.iter().find(|g| g.what.contains("ceiling")).unwrap();
        assert_eq!(ceiling.met(), Some(false)); // 10k vs 20k cycles/s
    }

    #[test]
    fn every_output_renders() {
        let r = sample();
        let svg = svg::render(&r);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(
            svg.matches("<polyline").count(),
            9,
            "3 engines with latency x 3 scenarios"
        );
        let md = markdown::render(&r, "latency.svg");
        assert!(md.contains("| redlock/rslock |") && md.contains("![acquire latency"));
        let text = table::render(&r);
        assert!(text.contains("redlock/raw") && text.contains("regression targets"));
        assert!(
            text.contains("servers: redis 7.0.15 on every node (5)"),
            "{text}"
        );
        assert!(text.contains("ceiling[native]") && text.contains("25,000"));
        assert!(text.contains("redlock/ceiling[native]"));
        assert!(md.contains("| ceiling[native] (DELIFEQ) | 25,000 |"));
        assert!(md.contains("- Servers: redis 7.0.15 on every node (5)"));
    }

    #[test]
    fn formatting() {
        assert_eq!(group(1_234_567.8), "1,234,568");
        assert_eq!(group(12.0), "12");
        assert_eq!(micros(850.0), "850µs");
        assert_eq!(micros(1_234.0), "1.23ms");
        assert_eq!(micros(2_500_000.0), "2.50s");
    }
}
