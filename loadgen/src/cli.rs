//! Command-line options (clap derive) and their validation into a [`Plan`]: what to run, on which nodes.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use crate::engines::{EngineKind, Waiting};
use crate::overload::args::{Kind, OverloadArgs, Spec};
use crate::units::{parse_count, parse_duration, parse_hold, Hold};
use crate::workload::{Distribution, Scenario, Stop, Workload};

/// Throughput and latency of redlock-engine under contention, side by side with rslock, the raw command
/// stream and the Redis-side ceiling. With no arguments: 5 spawned redis-servers, the standard scenarios,
/// every engine.
#[derive(Parser, Debug, Clone)]
#[command(name = "loadgen", version)]
pub struct Options {
    /// Existing nodes, comma-separated `redis://host:port` URLs (or `redis-cluster://host:port?node=…` and
    /// `redis-sentinel://host:port?sentinelServiceName=…`, for redlock and redlock-fred); never stopped.
    /// Default: spawn local redis-servers.
    #[arg(long, value_delimiter = ',', value_name = "URLS")]
    pub nodes: Vec<String>,
    /// redis-server processes to start on free loopback ports when `--nodes` is not given (1..=9).
    #[arg(long, default_value = "5", value_parser = parse_count, value_name = "N")]
    pub spawn: u64,
    /// Engines to run, one after another on the same nodes and workload.
    /// Default: redlock,redlock-fred,rslock,raw, plus ceiling when redis-benchmark is installed.
    #[arg(long = "engine", value_delimiter = ',', value_name = "LIST")]
    pub engines: Option<Vec<EngineKind>>,
    /// `standard`: (a) 1 worker, distinct keys; (b) 64 workers, distinct keys; (c) 64 workers on 4 keys.
    /// `custom`: one run with --concurrency/--keys. Default: standard, or custom when either is given.
    /// `burst`, `held`, `overload`: issue 14's overload scenarios (redlock and rslock by default).
    #[arg(long, value_enum)]
    pub scenario: Option<ScenarioKind>,
    /// Concurrent workers (tokio tasks). Default (custom): 64.
    #[arg(long, value_parser = parse_count, value_name = "N")]
    pub concurrency: Option<u64>,
    /// Keys the workers pick from; far more keys than workers means no contention. Default (custom): 1m.
    #[arg(long, value_parser = parse_count, value_name = "N")]
    pub keys: Option<u64>,
    /// How workers pick keys.
    #[arg(long, value_enum, default_value_t = Distribution::Uniform)]
    pub distribution: Distribution,
    /// Exponent of the zipf distribution (1.0: key k is picked in proportion to 1/k).
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub zipf_exponent: f64,
    /// How long a lock is held before release: `0`, `2ms`, or a range `1ms..5ms`.
    #[arg(long, default_value = "0", value_parser = parse_hold, value_name = "TIME")]
    pub hold: Hold,
    /// Lock TTL.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "TIME")]
    pub ttl: Duration,
    /// Attempts after the first one before an acquire counts as failed.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub retries: u32,
    /// Base pause between attempts.
    #[arg(long, default_value = "50ms", value_parser = parse_duration, value_name = "TIME")]
    pub retry_delay: Duration,
    /// Random extra pause, uniform in [0, jitter].
    #[arg(long, default_value = "50ms", value_parser = parse_duration, value_name = "TIME")]
    pub retry_jitter: Duration,
    /// Measured time per run. Default: 5s.
    #[arg(long, value_parser = parse_duration, value_name = "TIME", conflicts_with = "cycles")]
    pub duration: Option<Duration>,
    /// Stop each run after this many acquire calls instead of after --duration.
    #[arg(long, value_parser = parse_count, value_name = "N")]
    pub cycles: Option<u64>,
    /// Uncounted warm-up before each run.
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "TIME")]
    pub warmup: Duration,
    /// loadgen processes on the same nodes: the workers of each run (--concurrency, or the scenario's) are
    /// split among them (64 workers, 4 processes: 16 each), started together, and their histograms and
    /// per-worker counts merged, so contention and fairness across processes are measured. A scenario with
    /// fewer workers than P runs in that many processes. The ceiling always runs once.
    #[arg(long, default_value = "1", value_parser = parse_count, value_name = "P")]
    pub processes: u64,
    /// How redlock and redlock-fred wait under contention: `smart` (the engine's defaults: in-process
    /// queue, release notifications, local hand-off) or `plain` (randomized retry backoff only). A list,
    /// e.g. `plain,smart`, runs each in turn in the same run. Other engines ignore it.
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "smart",
        value_name = "LIST"
    )]
    pub waiting: Vec<Waiting>,
    /// Internal: run as one worker process of a `--processes` run, driven over stdin/stdout.
    #[arg(long, hide = true, requires = "tag")]
    pub worker_process: bool,
    /// Internal: the key tag shared by the processes of one run.
    #[arg(long, hide = true, value_name = "TAG")]
    pub tag: Option<String>,
    /// Tokio runtime flavour. `current` measured faster on a 2-core machine (see results/README.md).
    #[arg(long, value_enum, default_value_t = RuntimeKind::Current)]
    pub runtime: RuntimeKind,
    /// Write the results as one JSON document to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write a Markdown summary, an SVG latency-percentile plot and the JSON into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No progress bar and no table; errors still go to stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Options of the overload scenarios.
    #[command(flatten)]
    pub overload: OverloadArgs,
}

/// `--scenario`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScenarioKind {
    /// The three standard scenarios.
    Standard,
    /// One run from --concurrency and --keys.
    Custom,
    /// B acquires at once on distinct keys (--burst), after (b) for the goodput ratio.
    Burst,
    /// H renewed locks held (--held, --hold-for).
    Held,
    /// (b), then --overload-workers workers on distinct keys.
    Overload,
}

impl ScenarioKind {
    /// The overload scenario it names, if any.
    fn overload(self) -> Option<Kind> {
        match self {
            Self::Burst => Some(Kind::Burst),
            Self::Held => Some(Kind::Held),
            Self::Overload => Some(Kind::Overload),
            Self::Standard | Self::Custom => None,
        }
    }
}

/// `--runtime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeKind {
    /// One thread runs every worker and connection.
    Current,
    /// A worker thread per core.
    Multi,
}

impl RuntimeKind {
    /// The `--runtime` value that selects it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Current => "current",
            Self::Multi => "multi",
        }
    }

    /// How reports name it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Current => "current-thread",
            Self::Multi => "multi-thread",
        }
    }
}

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
            NodeSource::Existing(self.nodes.iter().map(|u| u.trim().to_string()).collect())
        };
        let kind = self.scenario.and_then(ScenarioKind::overload);
        let default_engines = self.engines.is_none() && kind.is_none();
        let defaults = match kind {
            Some(_) => vec![EngineKind::Redlock, EngineKind::Rslock],
            None => DEFAULT_ENGINES.to_vec(),
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
                if self.processes > 1 {
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
        if !(1..=MAX_PROCESSES).contains(&self.processes) {
            return Err(format!(
                "--processes must be between 1 and {MAX_PROCESSES}, got {}",
                self.processes
            ));
        }
        let processes = self.processes as usize;
        if custom && processes > scenarios[0].concurrency {
            return Err(format!(
                "--concurrency ({}) must be at least --processes ({processes}): the workers are split among the processes",
                scenarios[0].concurrency
            ));
        }
        if matches!(stop, Stop::Cycles(n) if n < processes as u64) {
            return Err("--cycles must be at least --processes".into());
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
        };
        Ok(Plan {
            nodes,
            engines,
            default_engines,
            scenarios,
            workload,
            runtime: self.runtime,
            json: self.json.clone(),
            out: self.out.clone(),
            quiet: self.quiet || self.worker_process,
            processes,
            waiting,
            child: self.tag.clone().filter(|_| self.worker_process),
            overload,
        })
    }
}

/// Folds a clap error into one line (clap prints usage and hints on several).
pub fn one_line(err: &clap::Error) -> String {
    err.to_string()
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("For more information") && !l.starts_with("Usage:")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Result<Plan, String> {
        let opts = Options::try_parse_from(std::iter::once("loadgen").chain(args.iter().copied()))
            .map_err(|e| one_line(&e))?;
        opts.plan()
    }

    #[test]
    fn no_arguments_is_the_standard_scenario_on_five_spawned_nodes() {
        let p = plan(&[]).unwrap();
        assert_eq!(p.nodes, NodeSource::Spawn(5));
        assert_eq!(p.engines, DEFAULT_ENGINES.to_vec());
        assert!(p.default_engines);
        let shape: Vec<_> = p
            .scenarios
            .iter()
            .map(|s| (s.id, s.concurrency, s.keys))
            .collect();
        assert_eq!(
            shape,
            [("a", 1, 1_000_000), ("b", 64, 1_000_000), ("c", 64, 4)]
        );
        assert_eq!(p.workload.stop, Stop::Duration(Duration::from_secs(5)));
        assert_eq!(p.runtime, RuntimeKind::Current);
        assert_eq!(p.overload, None, "the default run has no overload scenario");
    }

    #[test]
    fn custom_run_with_units() {
        let p = plan(&[
            "--concurrency",
            "8",
            "--keys",
            "100k",
            "--hold",
            "1ms..2ms",
            "--ttl",
            "2s",
            "--duration",
            "250ms",
            "--engine",
            "redlock,raw",
            "--retry-delay",
            "5ms",
            "--distribution",
            "zipf",
            "--runtime",
            "multi",
        ])
        .unwrap();
        assert_eq!(p.scenarios.len(), 1);
        assert_eq!(
            (p.scenarios[0].concurrency, p.scenarios[0].keys),
            (8, 100_000)
        );
        assert_eq!(p.workload.stop, Stop::Duration(Duration::from_millis(250)));
        assert_eq!(p.workload.ttl, Duration::from_secs(2));
        assert_eq!(p.workload.retry_delay, Duration::from_millis(5));
        assert_eq!(p.workload.distribution, Distribution::Zipf);
        assert_eq!(p.engines, [EngineKind::Redlock, EngineKind::Raw]);
        assert!(!p.default_engines);
        assert_eq!(p.runtime, RuntimeKind::Multi);
    }

    #[test]
    fn nodes_and_cycles() {
        let p = plan(&[
            "--nodes",
            "redis://127.0.0.1:7101,redis://127.0.0.1:7102",
            "--cycles",
            "10k",
        ])
        .unwrap();
        assert_eq!(
            p.nodes,
            NodeSource::Existing(vec![
                "redis://127.0.0.1:7101".into(),
                "redis://127.0.0.1:7102".into()
            ])
        );
        assert_eq!(p.workload.stop, Stop::Cycles(10_000));
    }

    #[test]
    fn processes_and_waiting() {
        let p = plan(&[]).unwrap();
        assert_eq!(
            (p.processes, p.waiting.as_slice()),
            (1, &[Waiting::Smart][..])
        );
        assert_eq!(p.child, None);
        let p = plan(&[
            "--concurrency",
            "64",
            "--keys",
            "4",
            "--processes",
            "4",
            "--waiting",
            "plain,smart,plain",
        ])
        .unwrap();
        assert_eq!(p.processes, 4);
        assert_eq!(p.waiting, [Waiting::Plain, Waiting::Smart]);
        // The standard scenarios take any P: (a) then runs in one process.
        assert_eq!(plan(&["--processes", "4"]).unwrap().processes, 4);
        let p = plan(&["--processes", "2", "--cycles", "2"]).unwrap();
        assert_eq!(p.workload.stop, Stop::Cycles(2));
    }

    #[test]
    fn worker_process_mode() {
        let p = plan(&[
            "--worker-process",
            "--tag",
            "03",
            "--nodes",
            "redis://127.0.0.1:7101",
            "--engine",
            "rslock",
            "--concurrency",
            "16",
            "--keys",
            "4",
        ])
        .unwrap();
        assert_eq!(p.child.as_deref(), Some("03"));
        assert!(p.quiet);
        for args in [
            &[
                "--worker-process",
                "--tag",
                "1",
                "--concurrency",
                "2",
                "--keys",
                "2",
            ][..],
            &[
                "--worker-process",
                "--tag",
                "1",
                "--nodes",
                "redis://127.0.0.1:1",
                "--engine",
                "redlock,rslock",
                "--keys",
                "2",
            ][..],
            &[
                "--worker-process",
                "--tag",
                "1",
                "--nodes",
                "redis://127.0.0.1:1",
                "--engine",
                "redlock",
                "--waiting",
                "plain,smart",
                "--keys",
                "2",
            ][..],
        ] {
            let err = plan(args).unwrap_err();
            assert!(
                err.contains("--worker-process is internal"),
                "{args:?}: {err}"
            );
        }
        // The tag is required with --worker-process.
        assert!(plan(&["--worker-process", "--nodes", "redis://127.0.0.1:1"]).is_err());
    }

    #[test]
    fn bad_input_is_one_line() {
        for (args, needle) in [
            (
                &["--concurrency", "0"][..],
                "--concurrency must be at least 1",
            ),
            (&["--duration", "0"][..], "--duration must be above zero"),
            (&["--duration", "0s"][..], "--duration must be above zero"),
            (&["--keys", "0"][..], "--keys must be at least 1"),
            (&["--engine", "redlock,nope"][..], "invalid value 'nope'"),
            (&["--ttl", "10"][..], "no unit"),
            (&["--spawn", "0"][..], "--spawn must be between 1 and 9"),
            (&["--hold", "20s"][..], "must be below --ttl"),
            (
                &["--scenario", "standard", "--concurrency", "4"][..],
                "custom run",
            ),
            (
                &["--duration", "1s", "--cycles", "5"][..],
                "cannot be used with",
            ),
            (
                &["--processes", "0"][..],
                "--processes must be between 1 and 64",
            ),
            (
                &["--processes", "65"][..],
                "--processes must be between 1 and 64",
            ),
            (
                &["--concurrency", "2", "--processes", "4"][..],
                "--concurrency (2) must be at least --processes (4)",
            ),
            (
                &["--processes", "4", "--cycles", "3"][..],
                "--cycles must be at least --processes",
            ),
            (&["--waiting", "clever"][..], "invalid value 'clever'"),
        ] {
            let err = plan(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
            assert!(!err.contains('\n'), "{args:?}: not one line: {err}");
        }
    }
}
