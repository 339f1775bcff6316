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

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redlock_engine::{Config, Lock, Redlock};

use crate::clock::{mono_ns, wall_ns, with_first_poll, InstantMap};
use crate::counter::Counter;
use crate::record::{Fenced, Grant, Log, Outcome, Wrote};

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
    /// Resources to lock, comma-separated; each round picks one at random.
    #[arg(long, value_delimiter = ',', required = true)]
    pub resources: Vec<String>,
    /// Concurrent tasks (holders) in this process.
    #[arg(long, default_value_t = 4)]
    pub tasks: usize,
    /// Lock TTL.
    #[arg(long, default_value_t = 1000)]
    pub ttl_ms: u64,
    /// Per-node deadline of a round.
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
            format!("--tasks={}", self.tasks),
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
        v
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

struct Ctx {
    args: ClientArgs,
    redlock: Redlock,
    log: Log,
    map: InstantMap,
    stop: AtomicBool,
    ttl: Duration,
    drift_ns: u64,
}

async fn run(args: ClientArgs) -> Result<(), String> {
    let log = Log::create(&args.log).map_err(|e| format!("log {}: {e}", args.log.display()))?;
    let ttl = Duration::from_millis(args.ttl_ms);
    let defaults = Config::default();
    let config = Config {
        nodes: args.nodes.clone(),
        node_timeout: Some(Duration::from_millis(args.node_timeout_ms)),
        min_validity_factor: args.min_validity,
        // One attempt per call: each logged attempt is one validity measurement.
        retry_count: 0,
        connect_timeout: Duration::from_secs(1),
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
        ttl,
        drift_ns: drift.as_nanos() as u64,
        args,
    });
    let watcher = tokio::spawn(watch_stop(ctx.clone()));
    let workers: Vec<_> = (0..ctx.args.tasks)
        .map(|i| tokio::spawn(worker(ctx.clone(), i)))
        .collect();
    let mut result = Ok(());
    for w in workers {
        match w.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => result = Err(e),
            Err(e) => result = Err(format!("worker panicked: {e}")),
        }
    }
    ctx.stop.store(true, Ordering::Relaxed);
    let _ = watcher.await;
    result
}

/// Sets `stop` when the stop file appears or the hard deadline passes; logs wall-clock samples.
async fn watch_stop(ctx: Arc<Ctx>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(ctx.args.max_secs);
    let mut tick = 0u64;
    while !ctx.stop.load(Ordering::Relaxed) {
        if ctx.args.stop_file.exists() || tokio::time::Instant::now() >= deadline {
            ctx.stop.store(true, Ordering::Relaxed);
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
    let mut grants = 0u64;
    for _ in 0..MAX_ROUNDS {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        let resource = &ctx.args.resources[fastrand::usize(..ctx.args.resources.len())];
        let t0 = mono_ns();
        // Fenced when there is a store to fence: every grant then carries a token.
        let (result, fp) = if counter.is_some() {
            with_first_poll(ctx.redlock.try_acquire_fenced(resource.as_bytes(), ctx.ttl)).await
        } else {
            with_first_poll(ctx.redlock.try_acquire(resource.as_bytes(), ctx.ttl)).await
        };
        let t1 = mono_ns();
        ctx.log.attempt(t0, t1, Outcome::of(&result));
        if let Ok(lock) = result {
            grants += 1;
            let grant = hold(
                &ctx,
                &holder,
                resource,
                lock,
                [t0, fp, t1],
                counter.as_mut(),
                grants,
            )
            .await
            .map_err(|e| format!("{holder}: storage: {e}"))?;
            ctx.log.grant(&grant);
        }
        let pause = fastrand::u64(..=ctx.args.pause_us);
        tokio::time::sleep(Duration::from_micros(pause)).await;
    }
    Ok(())
}

/// The critical section and the release; returns the grant to log.
async fn hold(
    ctx: &Ctx,
    holder: &str,
    resource: &str,
    mut lock: Lock,
    [t0, fp, t1]: [u64; 3],
    mut counter: Option<&mut Counter>,
    nth: u64,
) -> std::io::Result<Grant> {
    let vu0 = ctx.map.to_ns(lock.valid_until());
    let cs_start = mono_ns();
    ctx.log.begin(holder, resource, cs_start);
    let key = format!("counter:{resource}");
    let read = match counter.as_deref_mut() {
        Some(c) => Some(c.get(&key).await?),
        None => None,
    };
    tokio::time::sleep(Duration::from_micros(ctx.args.cs_sleep_us)).await;
    let (mut ext, mut ext_fp) = (Outcome::None, 0);
    if ctx.args.extend_every > 0 && nth.is_multiple_of(ctx.args.extend_every) && lock.is_valid() {
        let ext_start = mono_ns();
        let (r, fp) = with_first_poll(ctx.redlock.extend(&mut lock, ctx.ttl)).await;
        (ext, ext_fp) = (Outcome::of(&r), fp);
        if let Err(e) = r {
            ctx.log.error(holder, "extend", mono_ns() - ext_start, &e);
        }
    }
    // Check before writing: past `valid_until` another client may hold the lock.
    let valid = lock.is_valid();
    if !valid && ext == Outcome::None {
        // Woke up (or was slow) past validity: extend must refuse, and we log what it said.
        let (r, fp) = with_first_poll(ctx.redlock.extend(&mut lock, ctx.ttl)).await;
        (ext, ext_fp) = (Outcome::of(&r), fp);
    }
    let wrote = match (counter.as_deref_mut(), read) {
        (Some(c), Some(v)) if valid => {
            c.set(&key, v + 1).await?;
            Wrote::Yes
        }
        (Some(_), _) => Wrote::Skipped,
        _ => Wrote::NoCounter,
    };
    // The fenced write goes out even past validity: fencing is what must stop a late holder.
    let token = lock.fencing_token();
    let fenced = match (counter, token) {
        (Some(c), Some(t)) => match c.fenced_write(resource, t).await? {
            Some(seq) => Fenced::Accepted(seq),
            None => Fenced::Rejected,
        },
        _ => Fenced::None,
    };
    let cs_end = mono_ns();
    let vu = ctx.map.to_ns(lock.valid_until());
    let rel_start = mono_ns();
    let released = ctx.redlock.release(lock).await;
    let rel = Outcome::of(&released);
    if let Some(e) = released.as_ref().err().filter(|_| cs_end <= vu) {
        ctx.log.error(holder, "release", mono_ns() - rel_start, e);
    }
    Ok(Grant {
        holder: holder.to_string(),
        resource: resource.to_string(),
        ttl_ms: ctx.args.ttl_ms,
        drift_ns: ctx.drift_ns,
        t0,
        fp,
        t1,
        vu0,
        vu,
        ext_fp,
        cs_start,
        cs_end,
        rel_start,
        wrote,
        ext,
        rel,
        token,
        fenced,
    })
}
