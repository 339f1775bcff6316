//! [`Options::plan`]: the checks on the options, one error line each, and the [`Plan`] they produce.

use std::path::PathBuf;
use std::time::Duration;

use crate::election::args::Spec as ElectionSpec;
use crate::engines::{EngineKind, Waiting};
use crate::overload::args::Spec;
use crate::workload::{Scenario, Stop, Workload, CONTENTION_LAYOUTS};

use super::options::{Options, Persistence, RuntimeKind, ScenarioKind, Server};

/// Where the nodes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeSource {
    /// Start this many redis-servers and stop them on exit.
    Spawn(usize),
    /// Use these URLs; never stop them.
    Existing(Vec<String>),
}

/// Validated options: everything the run needs.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The nodes.
    pub nodes: NodeSource,
    /// Engines in run order.
    pub engines: Vec<EngineKind>,
    /// Whether the engine list was the default (ceiling is then added only if redis-benchmark exists).
    pub default_engines: bool,
    /// Scenarios in run order.
    pub scenarios: Vec<Scenario>,
    /// What every worker does.
    pub workload: Workload,
    /// Runtime flavour.
    pub runtime: RuntimeKind,
    /// Durability of spawned nodes.
    pub persistence: Persistence,
    /// The server binary of spawned nodes.
    pub server: Server,
    /// `--json`.
    pub json: Option<PathBuf>,
    /// `--out`.
    pub out: Option<PathBuf>,
    /// `--quiet`.
    pub quiet: bool,
    /// loadgen processes per run (1: the workers are tasks of this process).
    pub processes: usize,
    /// Waiting modes of redlock, in run order.
    pub waiting: Vec<Waiting>,
    /// Set when this process is one worker process of a `--processes` run: the key tag.
    pub child: Option<String>,
    /// The burst/held/overload scenario's options, when one was chosen.
    pub overload: Option<Spec>,
    /// `--scenario contention`: run its rows ([`crate::contention`]) instead of `scenarios`.
    pub contention: bool,
    /// `--scenario election`: its options ([`crate::election`]); it runs instead of everything else.
    pub election: Option<ElectionSpec>,
}

/// Most loadgen processes per run.
pub const MAX_PROCESSES: u64 = 64;

/// The engines run by default, in order.
pub const DEFAULT_ENGINES: [EngineKind; 4] = [
    EngineKind::Redlock,
    EngineKind::RedlockFred,
    EngineKind::Rslock,
    EngineKind::Raw,
];

impl Options {
    /// Checks the options and turns them into a [`Plan`]; the error is one line for the user.
    pub fn plan(&self) -> Result<Plan, String> {
        let nodes = if self.nodes.is_empty() {
            if !(1..=redlock_engine::MAX_NODES as u64).contains(&self.spawn) {
                return Err(format!(
                    "--spawn must be between 1 and {}, got {}",
                    redlock_engine::MAX_NODES,
                    self.spawn
                ));
            }
            NodeSource::Spawn(self.spawn as usize)
        } else {
            if self.nodes.iter().any(|u| u.trim().is_empty()) {
                return Err("--nodes has an empty entry".into());
            }
            if self.persistence != Persistence::None {
                return Err(
                    "--persistence applies to spawned nodes: set appendfsync on --nodes yourself"
                        .into(),
                );
            }
            if self.server.is_some() {
                return Err("--server applies to spawned nodes: drop it with --nodes (the report names each node's server anyway)".into());
            }
            NodeSource::Existing(self.nodes.iter().map(|u| u.trim().to_string()).collect())
        };
        let kind = self.scenario.and_then(ScenarioKind::overload);
        let contention = self.scenario == Some(ScenarioKind::Contention);
        let election = self.election_plan(&nodes)?;
        let default_engines = self.engines.is_none() && kind.is_none() && election.is_none();
        let defaults = if kind.is_some() || contention {
            vec![EngineKind::Redlock, EngineKind::Rslock]
        } else {
            DEFAULT_ENGINES.to_vec()
        };
        let mut engines = Vec::new();
        for e in self.engines.clone().unwrap_or(defaults) {
            if !engines.contains(&e) {
                engines.push(e);
            }
        }
        if engines.is_empty() {
            return Err("--engine needs at least one engine".into());
        }
        let custom = self.concurrency.is_some() || self.keys.is_some();
        let mut overload = None;
        let scenarios = match (self.scenario, custom) {
            (Some(_), true) if kind.is_some() => {
                return Err("--concurrency/--keys define a custom run; the overload scenarios take --burst, --held or --overload-workers".into())
            }
            (Some(_), false) if kind.is_some() => {
                if self.processes.is_some_and(|p| p > 1) {
                    return Err("--processes applies to the standard and custom scenarios".into());
                }
                let (spec, scenarios) = self.overload.plan(kind.expect("checked"))?;
                overload = Some(spec);
                scenarios
            }
            (Some(ScenarioKind::Standard), true) => {
                return Err(
                    "--concurrency/--keys define a custom run; drop --scenario standard".into(),
                )
            }
            (Some(ScenarioKind::Standard), false) | (None, false) => Scenario::standard(),
            (Some(ScenarioKind::Contention), _) => {
                self.contention_fits(custom, &engines)?;
                Vec::new()
            }
            (Some(ScenarioKind::Election), _) => {
                if custom || self.processes.is_some() || self.engines.is_some() || self.lock.is_some() {
                    return Err("--scenario election runs its own processes on the redlock engine: drop --concurrency/--keys, --processes, --engine and --lock".into());
                }
                if self.out.is_some() {
                    return Err("--scenario election writes its table and --json only: drop --out".into());
                }
                Vec::new()
            }
            (Some(_), _) | (None, true) => {
                let concurrency = self.concurrency.unwrap_or(64);
                let keys = self.keys.unwrap_or(1_000_000);
                if concurrency == 0 {
                    return Err("--concurrency must be at least 1".into());
                }
                if concurrency > 100_000 {
                    return Err(format!(
                        "--concurrency {concurrency} is too many (at most 100k)"
                    ));
                }
                if keys == 0 {
                    return Err("--keys must be at least 1".into());
                }
                vec![Scenario::custom(concurrency as usize, keys)]
            }
        };
        let stop = match (self.duration, self.cycles) {
            (_, Some(0)) => return Err("--cycles must be at least 1".into()),
            (_, Some(n)) => Stop::Cycles(n),
            (Some(d), None) if d.is_zero() => return Err("--duration must be above zero".into()),
            (Some(d), None) => Stop::Duration(d),
            (None, None) => Stop::Duration(Duration::from_secs(5)),
        };
        if self.ttl < Duration::from_millis(1) {
            return Err("--ttl must be at least 1ms".into());
        }
        if self.hold.max >= self.ttl {
            return Err(format!(
                "--hold ({}) must be below --ttl ({:?})",
                self.hold, self.ttl
            ));
        }
        if !(self.zipf_exponent > 0.0 && self.zipf_exponent.is_finite()) {
            return Err("--zipf-exponent must be above zero".into());
        }
        let processes = self.processes.unwrap_or(1);
        if !(1..=MAX_PROCESSES).contains(&processes) {
            return Err(format!(
                "--processes must be between 1 and {MAX_PROCESSES}, got {processes}"
            ));
        }
        let processes = processes as usize;
        if custom && processes > scenarios[0].concurrency {
            return Err(format!(
                "--concurrency ({}) must be at least --processes ({processes}): the workers are split among the processes",
                scenarios[0].concurrency
            ));
        }
        if matches!(stop, Stop::Cycles(n) if n < processes as u64) {
            return Err("--cycles must be at least --processes".into());
        }
        let most = CONTENTION_LAYOUTS.iter().map(|l| l.processes).max();
        if let (true, Stop::Cycles(n), Some(most)) = (contention, stop, most) {
            if n < most as u64 {
                return Err(format!("--cycles must be at least {most} with --scenario contention: its {most} processes split the budget"));
            }
        }
        let mut waiting = Vec::new();
        for w in &self.waiting {
            if !waiting.contains(w) {
                waiting.push(*w);
            }
        }
        if waiting.is_empty() {
            return Err("--waiting needs at least one mode".into());
        }
        if self.worker_process {
            let one = |n: usize| n == 1;
            if !matches!(nodes, NodeSource::Existing(_))
                || !one(engines.len())
                || engines[0] == EngineKind::Ceiling
                || !one(waiting.len())
                || !custom
                || processes != 1
            {
                return Err("--worker-process is internal: it takes --nodes, one engine, one --waiting, --concurrency and --keys".into());
            }
        }
        let workload = Workload {
            distribution: self.distribution,
            zipf_exponent: self.zipf_exponent,
            hold: self.hold,
            ttl: self.ttl,
            retries: self.retries,
            retry_delay: self.retry_delay,
            retry_jitter: self.retry_jitter,
            stop,
            warmup: self.warmup,
            lock: self.lock.unwrap_or_default(),
        };
        Ok(Plan {
            nodes,
            engines,
            default_engines,
            scenarios,
            workload,
            runtime: self.runtime,
            persistence: self.persistence,
            server: self.server.clone().unwrap_or_default(),
            json: self.json.clone(),
            out: self.out.clone(),
            quiet: self.quiet || self.worker_process,
            processes,
            waiting,
            child: self.tag.clone().filter(|_| self.worker_process),
            overload,
            contention,
            election,
        })
    }

    /// `--scenario election`'s options, checked (`None` for another scenario); a child process of
    /// its (`--election-child`) needs `--nodes`.
    fn election_plan(&self, nodes: &NodeSource) -> Result<Option<ElectionSpec>, String> {
        if self.scenario != Some(ScenarioKind::Election) {
            if self.election.election_child.is_some() {
                return Err("--election-child is internal to --scenario election".into());
            }
            return Ok(None);
        }
        let spec = self.election.plan()?;
        if spec.child.is_some() && !matches!(nodes, NodeSource::Existing(_)) {
            return Err("--election-child is internal: it takes --nodes".into());
        }
        Ok(Some(spec))
    }

    /// `--scenario contention` sets each row's workers, keys, processes and lock itself: the options
    /// that would set them are refused, not silently overridden; so is the ceiling, which is no lock.
    fn contention_fits(&self, custom: bool, engines: &[EngineKind]) -> Result<(), String> {
        if custom {
            return Err("--scenario contention runs 64 workers on 4 keys in every row: drop --concurrency/--keys".into());
        }
        if self.processes.is_some() {
            return Err("--scenario contention runs each row in its own layout (1, 4 and 16 processes): drop --processes".into());
        }
        if self.lock.is_some() {
            return Err("--scenario contention runs the exclusive and the fair lock in every layout: drop --lock".into());
        }
        if engines.contains(&EngineKind::Ceiling) {
            return Err("--scenario contention compares lock clients; the ceiling takes no lock: drop it from --engine".into());
        }
        Ok(())
    }
}
