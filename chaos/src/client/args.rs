//! The options of one client process, and the command line that reproduces them (the orchestrator
//! builds a [`ClientArgs`] and re-executes itself with [`ClientArgs::argv`]).

use std::path::PathBuf;

/// Options of one client process (the orchestrator builds them; see [`ClientArgs::argv`]).
#[derive(Debug, Clone, clap::Args)]
pub struct ClientArgs {
    /// Name of this client in the logs; holders are `id.task`.
    #[arg(long)]
    pub id: String,
    /// Lock node URLs, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub nodes: Vec<String>,
    /// Port of the storage node with the counters; without it the critical section writes nothing.
    #[arg(long)]
    pub storage: Option<u16>,
    /// Resources to lock, comma-separated; each round picks one at random (`--lock many`: a pair of
    /// neighbours, `i` and `i + 1`, wrapping around; `--lock elect|observe`: the first is the
    /// election's name).
    #[arg(long, value_delimiter = ',', required = true)]
    pub resources: Vec<String>,
    /// Which lock each round takes.
    #[arg(long, value_enum, default_value_t = LockMode::Exclusive)]
    pub lock: LockMode,
    /// `retry_count` of the engine: 0 for one attempt per call; the waiting modes want more.
    #[arg(long, default_value_t = 0)]
    pub retries: u32,
    /// `--lock rw`: the fraction of rounds that take the writer's lock.
    #[arg(long, default_value_t = 0.25)]
    pub write_ratio: f64,
    /// Task 0 keeps every n-th lock it gets from the nodes until only 40% of the TTL is left (0:
    /// never), so the local waiter it is handed to must extend it on take-over. (From the nodes: such a
    /// lock starts a hand-off streak, so its release does hand it over if a local task waits.)
    #[arg(long, default_value_t = 0)]
    pub linger_every: u64,
    /// Concurrent tasks (holders) in this process.
    #[arg(long, default_value_t = 4)]
    pub tasks: usize,
    /// `--lock renewed`: tasks doing `try_acquire` → `release` on `--load-resources` beside the holders.
    #[arg(long, default_value_t = 0)]
    pub load_tasks: usize,
    /// `--lock renewed`: the load tasks' resources, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub load_resources: Vec<String>,
    /// The engine's `max_in_flight` (default: the library's).
    #[arg(long)]
    pub max_in_flight: Option<usize>,
    /// Lock TTL.
    #[arg(long, default_value_t = 1000)]
    pub ttl_ms: u64,
    /// Per-node deadline of a round (0: fitted to the measured round trips, the library's default).
    #[arg(long, default_value_t = 50)]
    pub node_timeout_ms: u64,
    /// Least validity (fraction of the TTL) a grant must leave.
    #[arg(long, default_value_t = 0.1)]
    pub min_validity: f64,
    /// Pause inside the critical section, between reading and writing the counter.
    #[arg(long, default_value_t = 1000)]
    pub cs_sleep_us: u64,
    /// Extend the lock inside every n-th critical section (0: never).
    #[arg(long, default_value_t = 0)]
    pub extend_every: u64,
    /// Random pause, uniform in [0, this], after each round.
    #[arg(long, default_value_t = 3000)]
    pub pause_us: u64,
    /// Hard bound on the run, whatever happens to the stop file.
    #[arg(long)]
    pub max_secs: u64,
    /// The run ends when this file exists.
    #[arg(long)]
    pub stop_file: PathBuf,
    /// Where to write the log.
    #[arg(long)]
    pub log: PathBuf,
    /// Log a wall-clock sample every 100 ms.
    #[arg(long)]
    pub wall_samples: bool,
    /// Turn on the engine's crashed-node quarantine, with the TTL as the maximum lock lifetime.
    #[arg(long)]
    pub quarantine: bool,
    /// With `--quarantine`: the maximum lock lifetime (default: the TTL).
    #[arg(long)]
    pub max_ttl_ms: Option<u64>,
    /// `--lock permit` / `--lock slot`: the semaphore's K (permits or slots).
    #[arg(long, default_value_t = 0)]
    pub permits: u32,
    /// The engine's `acquire_timeout` (default: the library's, none): how long a waiting acquire
    /// waits. `--lock fair` logs it, since its checker bounds a timed-out waiter's place with it.
    #[arg(long)]
    pub acquire_timeout_ms: Option<u64>,
    /// `--lock fair`, the control: wait with the plain `acquire` instead of `acquire_fair`, logged
    /// the same way, so the fairness checker must find overtakes (scenario 19).
    #[arg(long)]
    pub unordered: bool,
    /// Turn off the engine's clock-jump guard (`Config::clock_guard`, on by default): scenario 16's
    /// clients without it show the hazard it covers.
    #[arg(long)]
    pub no_clock_guard: bool,
}

impl ClientArgs {
    /// The command line that reproduces these options after `client`.
    pub fn argv(&self) -> Vec<String> {
        let mut v = vec![
            format!("--id={}", self.id),
            format!("--nodes={}", self.nodes.join(",")),
            format!("--resources={}", self.resources.join(",")),
            format!("--lock={}", self.lock.name()),
            format!("--retries={}", self.retries),
            format!("--write-ratio={}", self.write_ratio),
            format!("--linger-every={}", self.linger_every),
            format!("--tasks={}", self.tasks),
            format!("--load-tasks={}", self.load_tasks),
            format!("--ttl-ms={}", self.ttl_ms),
            format!("--node-timeout-ms={}", self.node_timeout_ms),
            format!("--min-validity={}", self.min_validity),
            format!("--cs-sleep-us={}", self.cs_sleep_us),
            format!("--extend-every={}", self.extend_every),
            format!("--pause-us={}", self.pause_us),
            format!("--permits={}", self.permits),
            format!("--max-secs={}", self.max_secs),
            format!("--stop-file={}", self.stop_file.display()),
            format!("--log={}", self.log.display()),
        ];
        if let Some(port) = self.storage {
            v.push(format!("--storage={port}"));
        }
        if self.wall_samples {
            v.push("--wall-samples".into());
        }
        if self.quarantine {
            v.push("--quarantine".into());
        }
        if let Some(ms) = self.max_ttl_ms {
            v.push(format!("--max-ttl-ms={ms}"));
        }
        if self.no_clock_guard {
            v.push("--no-clock-guard".into());
        }
        if self.unordered {
            v.push("--unordered".into());
        }
        if !self.load_resources.is_empty() {
            v.push(format!(
                "--load-resources={}",
                self.load_resources.join(",")
            ));
        }
        if let Some(n) = self.max_in_flight {
            v.push(format!("--max-in-flight={n}"));
        }
        if let Some(ms) = self.acquire_timeout_ms {
            v.push(format!("--acquire-timeout-ms={ms}"));
        }
        v
    }
}

/// The lock a client's rounds take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LockMode {
    /// One attempt (`try_acquire`, fenced with a storage node) on one resource.
    Exclusive,
    /// `acquire_many` on a pair of neighbouring resources.
    Many,
    /// `acquire_read`, or `acquire_write` in a `--write-ratio` of the rounds.
    Rw,
    /// `acquire`: waits in the local queue, wakes on release notifications, takes hand-offs.
    Wait,
    /// `acquire_renewed`: many renewed locks held at once, with load beside them
    /// ([`crate::client::renewed`]).
    Renewed,
    /// `acquire_permit`: one of `--permits` permits of a counting semaphore.
    Permit,
    /// `acquire_slot`: one of `--permits` slots of a slot semaphore.
    Slot,
    /// `acquire_fair`: the fair lock, every call and its rounds logged ([`crate::client::fair`]).
    Fair,
    /// A candidate of the election named by the first resource: campaigns, and while leader logs
    /// its claims ([`crate::client::elect`]).
    Elect,
    /// An observer of that election: logs every leader its `observe()` stream gives.
    Observe,
}

impl LockMode {
    fn name(self) -> &'static str {
        match self {
            Self::Exclusive => "exclusive",
            Self::Many => "many",
            Self::Rw => "rw",
            Self::Wait => "wait",
            Self::Renewed => "renewed",
            Self::Permit => "permit",
            Self::Slot => "slot",
            Self::Fair => "fair",
            Self::Elect => "elect",
            Self::Observe => "observe",
        }
    }
}
