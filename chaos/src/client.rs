//! `chaos client`: one client process. Its tasks loop over acquire → critical section → release on a few
//! shared resources and log every attempt and grant (see [`crate::record`]). It is a real process so the
//! orchestrator can freeze it (SIGSTOP) or run it under libfaketime.
//!
//! The critical section is the lost-update probe: read the resource's counter on the storage node,
//! sleep, then — only if the lock is still valid — write it back plus one. A holder that finds its lock
//! expired after the pause skips the write and tries `extend` (which must fail), as a careful client would.
//!
//! With a storage node the locks are fenced (`try_acquire_fenced`), and the critical section also
//! writes to the fenced store with the lock's token, after the counter write and **whether or not the
//! lock is still valid**: the store, not the client's clock, decides. A late holder's write is rejected
//! once a later holder's has been accepted.
//!
//! `--lock` picks the lock kind ([`LockMode`]): one attempt of an exclusive lock (the default, above),
//! or the waiting calls — `acquire_many` on a pair of resources, `acquire_read`/`acquire_write`, or
//! `acquire` with the local queue and release notifications. Their critical sections are in
//! [`crate::section`].

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use std::collections::HashMap;
use std::sync::Mutex;

use redlock_engine::{Config, Lock, LockError, Redlock};
use tokio::sync::watch;

use crate::clock::{mono_ns, wall_ns, with_first_poll, with_polls, InstantMap};
use crate::counter::Counter;
use crate::record::{LockKind, Log, Outcome, Via, RESOURCE_SEPARATOR};
use crate::section::{hold, Held};

/// Upper bound on rounds per task, so no loop is unbounded even if the stop signal never comes.
const MAX_ROUNDS: u64 = 10_000_000;

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
    /// neighbours, `i` and `i + 1`, wrapping around).
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
        if !self.load_resources.is_empty() {
            v.push(format!(
                "--load-resources={}",
                self.load_resources.join(",")
            ));
        }
        if let Some(n) = self.max_in_flight {
            v.push(format!("--max-in-flight={n}"));
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
    /// `acquire_renewed`: many renewed locks held at once, with load beside them ([`crate::renewed`]).
    Renewed,
}

impl LockMode {
    fn name(self) -> &'static str {
        match self {
            Self::Exclusive => "exclusive",
            Self::Many => "many",
            Self::Rw => "rw",
            Self::Wait => "wait",
            Self::Renewed => "renewed",
        }
    }
}

/// Runs the client; non-zero exit on any setup or storage error.
pub fn main(args: ClientArgs) -> ExitCode {
    // One thread per process: parallelism comes from several processes, as in a real deployment.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match rt.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chaos client: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What every task of the process shares.
pub struct Ctx {
    pub args: ClientArgs,
    pub redlock: Redlock,
    pub log: Log,
    pub map: InstantMap,
    stop: AtomicBool,
    /// The same stop, for tasks that wait on it (thousands of renewed holders must not poll a flag).
    stop_tx: watch::Sender<bool>,
    pub ttl: Duration,
    pub drift_ns: u64,
    /// `valid_until` (raw ns) of the lock each resource's last local holder released: a lock handed
    /// over with a later one was extended on take-over. (Only the local queue's head holds a lock, so
    /// the entry is the hand-off's own, except after a holder's validity ran out; then it is a figure
    /// off by one, never a check.)
    pub released_until: Mutex<HashMap<String, u64>>,
}

async fn run(args: ClientArgs) -> Result<(), String> {
    let log = Log::create(&args.log).map_err(|e| format!("log {}: {e}", args.log.display()))?;
    let ttl = Duration::from_millis(args.ttl_ms);
    let defaults = Config::default();
    let config = Config {
        nodes: args.nodes.clone(),
        node_timeout: (args.node_timeout_ms > 0)
            .then(|| Duration::from_millis(args.node_timeout_ms)),
        min_validity_factor: args.min_validity,
        // 0 (the default): one attempt per call, so each logged call is one validity measurement.
        retry_count: args.retries,
        connect_timeout: Duration::from_secs(1),
        max_in_flight: args.max_in_flight.unwrap_or(defaults.max_in_flight),
        // Renewed holders cannot tell a local hand-off from a grant (see `crate::renewed`).
        local_queue: defaults.local_queue && args.lock != LockMode::Renewed,
        // With the quarantine, a restarted node must not vote for as long as any lock of ours can live.
        quarantine: args.quarantine,
        max_ttl: if args.quarantine {
            args.max_ttl_ms.map_or(ttl, Duration::from_millis)
        } else {
            defaults.max_ttl
        },
        ..defaults
    };
    let redlock = Redlock::new(config)
        .await
        .map_err(|e| format!("engine: {e}"))?;
    // The engine's rule: TTL x drift_factor + 2 ms, with the library's default factor.
    let drift = ttl.mul_f64(Config::default().drift_factor) + Duration::from_millis(2);
    let ctx = Arc::new(Ctx {
        redlock,
        log,
        map: InstantMap::new(),
        stop: AtomicBool::new(false),
        stop_tx: watch::channel(false).0,
        ttl,
        drift_ns: drift.as_nanos() as u64,
        released_until: Mutex::default(),
        args,
    });
    let watcher = tokio::spawn(watch_stop(ctx.clone()));
    let workers: Vec<_> = match ctx.args.lock {
        LockMode::Renewed => crate::renewed::spawn(&ctx),
        _ => (0..ctx.args.tasks)
            .map(|i| tokio::spawn(worker(ctx.clone(), i)))
            .collect(),
    };
    let mut result = Ok(());
    for w in workers {
        match w.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => result = Err(e),
            Err(e) => result = Err(format!("worker panicked: {e}")),
        }
    }
    ctx.set_stop();
    let _ = watcher.await;
    result
}

impl Ctx {
    fn set_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.stop_tx.send_replace(true);
    }

    /// A receiver that sees `true` once the process is told to stop.
    pub fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop_tx.subscribe()
    }
}

/// Sets `stop` when the stop file appears or the hard deadline passes; logs wall-clock samples.
async fn watch_stop(ctx: Arc<Ctx>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(ctx.args.max_secs);
    let mut tick = 0u64;
    while !ctx.stop.load(Ordering::Relaxed) {
        if ctx.args.stop_file.exists() || tokio::time::Instant::now() >= deadline {
            ctx.set_stop();
        }
        if ctx.args.wall_samples && tick.is_multiple_of(5) {
            ctx.log.wall(wall_ns(), mono_ns());
        }
        tick += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn worker(ctx: Arc<Ctx>, index: usize) -> Result<(), String> {
    let holder = format!("{}.{index}", ctx.args.id);
    let mut counter = match ctx.args.storage {
        Some(port) => Some(
            Counter::connect(port)
                .await
                .map_err(|e| format!("storage :{port}: {e}"))?,
        ),
        None => None,
    };
    let (mut grants, mut from_nodes) = (0u64, 0u64);
    for _ in 0..MAX_ROUNDS {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        let t0 = mono_ns();
        let Call {
            kind,
            resources,
            result,
            fp,
        } = acquire(&ctx, counter.is_some()).await;
        let t1 = mono_ns();
        ctx.log.attempt(t0, t1, Outcome::of(&result));
        if let Ok(lock) = result {
            grants += 1;
            let label = label(&resources);
            let vu0 = ctx.map.to_ns(lock.valid_until());
            let via = match lock.attempts() {
                0 => {
                    let released = ctx.released_until.lock().map(|m| m.get(&label).copied());
                    match released {
                        Ok(Some(until)) if vu0 > until => Via::HandoffExtended,
                        _ => Via::Handoff,
                    }
                }
                n => Via::Nodes(n),
            };
            if matches!(via, Via::Nodes(_)) {
                from_nodes += 1;
            }
            let linger = index == 0
                && ctx.args.linger_every > 0
                && matches!(via, Via::Nodes(_))
                && from_nodes.is_multiple_of(ctx.args.linger_every);
            let held = Held {
                holder: &holder,
                label,
                resources,
                kind,
                lock,
                times: [t0, fp, t1],
                via,
                nth: grants,
                linger,
            };
            let grant = hold(&ctx, held, counter.as_mut())
                .await
                .map_err(|e| format!("{holder}: storage: {e}"))?;
            ctx.log.grant(&grant);
        }
        let pause = fastrand::u64(..=ctx.args.pause_us);
        tokio::time::sleep(Duration::from_micros(pause)).await;
    }
    Ok(())
}

/// One acquire call.
struct Call {
    kind: LockKind,
    resources: Vec<String>,
    result: Result<Lock, LockError>,
    /// The bound on the engine's start of the winning round (see [`crate::clock::with_polls`]).
    fp: u64,
}

/// One acquire call of the client's [`LockMode`].
async fn acquire(ctx: &Ctx, fenced: bool) -> Call {
    let all = &ctx.args.resources;
    let i = fastrand::usize(..all.len());
    let one = vec![all[i].clone()];
    let (r, ttl) = (all[i].as_bytes(), ctx.ttl);
    match ctx.args.lock {
        LockMode::Exclusive => {
            // Fenced when there is a store to fence: every grant then carries a token.
            let (result, fp) = if fenced {
                with_first_poll(ctx.redlock.try_acquire_fenced(r, ttl)).await
            } else {
                with_first_poll(ctx.redlock.try_acquire(r, ttl)).await
            };
            Call::new(LockKind::Exclusive, one, result, fp)
        }
        LockMode::Many => {
            let mut pair = vec![all[i].clone(), all[(i + 1) % all.len()].clone()];
            // Either order: the engine must not care (no lock-ordering deadlock, same keys).
            if fastrand::bool() {
                pair.reverse();
            }
            let keys: Vec<&[u8]> = pair.iter().map(|r| r.as_bytes()).collect();
            let (result, polls) = with_polls(ctx.redlock.acquire_many(&keys, ttl)).await;
            Call::new(LockKind::Many, pair, result, polls.before_last)
        }
        LockMode::Rw if fastrand::f64() < ctx.args.write_ratio => {
            let (result, polls) = with_polls(ctx.redlock.acquire_write(r, ttl)).await;
            Call::new(LockKind::Write, one, result, polls.before_last)
        }
        LockMode::Rw => {
            let (result, polls) = with_polls(ctx.redlock.acquire_read(r, ttl)).await;
            Call::new(LockKind::Read, one, result, polls.before_last)
        }
        // `Renewed` runs its own tasks (`crate::renewed`); `worker` never sees it.
        LockMode::Wait | LockMode::Renewed => {
            let (result, polls) = with_polls(ctx.redlock.acquire(r, ttl)).await;
            Call::new(LockKind::Exclusive, one, result, polls.before_last)
        }
    }
}

impl Call {
    fn new(
        kind: LockKind,
        resources: Vec<String>,
        result: Result<Lock, LockError>,
        fp: u64,
    ) -> Self {
        Self {
            kind,
            resources,
            result,
            fp,
        }
    }
}

/// The `resource` field of a grant: its resources, sorted, joined (`m0+m1`).
fn label(resources: &[String]) -> String {
    let mut sorted: Vec<&str> = resources.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.join(&RESOURCE_SEPARATOR.to_string())
}
