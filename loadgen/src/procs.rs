//! `--processes P`: one run spread over P loadgen processes on the same nodes, so contention and
//! fairness *across processes* are measured, not only between tasks of one process.
//!
//! # How
//! The parent (which owns or was given the nodes, and watches them) re-executes itself
//! ([`std::env::current_exe`]) P times with the hidden `--worker-process --tag T` options, `--nodes`, the
//! engine, one `--waiting` mode and the workload. The run's W workers are split among the children
//! (W/P each, the first W mod P get one more); a `--cycles` budget is split the same way. Every child
//! uses the same key tag, so they contend on the same keys.
//!
//! The children talk to the parent over their stdio, one line each way at a time:
//!
//! | child → parent (stdout) | parent → child (stdin) |
//! |---|---|
//! | `ready` — connected | `go` once **all** are ready: start the warm-up |
//! | `warm` — warm-up done | `go` once all are warm: start measuring |
//! | `done N` — successful cycles so far (every 250 ms, for the progress bar) | |
//! | `result {json}` — the [`ChildResult`], then exit 0 | |
//!
//! so all children start the warm-up together and the measured phase together (two start barriers).
//! A child's error is one line on its stderr and a non-zero exit; the parent reports it as
//! `process i of P: <error>`.
//!
//! # No leftover processes
//! The parent keeps every child in a [`Children`] group that kills them by pid (SIGKILL) when dropped:
//! on an error, a lost node, Ctrl-C or SIGTERM (the run's future is dropped). Each child also asks the
//! kernel for SIGKILL when its parent dies (`PR_SET_PDEATHSIG`, for a parent killed with SIGKILL), sits in
//! its own process group (a terminal's Ctrl-C reaches the parent, which stops it), and gives up when its
//! stdin closes.
//!
//! # Merging
//! A child sends its merged histograms as `[value, count]` pairs of the recorded buckets (the values are
//! each bucket's highest equivalent value, so re-recording them into a histogram of the same bounds
//! restores the same buckets exactly), its counters, its per-worker success counts (all of them go into
//! Jain's fairness) and its measured time. Throughput is all cycles over the longest child's measured time.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::cli::{NodeSource, Plan, RuntimeKind};
use crate::engines::{EngineKind, LockClient, Waiting};
use crate::nodes::health::Health;
use crate::nodes::probe::NodeUrl;
use crate::run::{grace, phase, progress_bar, show_progress, Driver, RunContext, RunOutput};
use crate::stats::{histogram, WorkerStats};
use crate::workload::{KeyPicker, Scenario, Stop, Workload};

/// How long the children may take to start and connect.
const READY_WITHIN: Duration = Duration::from_secs(30);
/// How often a child reports its progress.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// What a child sends back: its workers' records, merged, plus the per-worker success counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildResult {
    /// Measured time, µs.
    pub elapsed_us: u64,
    /// Successful cycles of each worker.
    pub per_worker: Vec<u64>,
    /// Successful cycles.
    pub cycles: u64,
    /// Acquire calls.
    pub acquire_calls: u64,
    /// Attempts reported.
    pub attempts: u64,
    /// Acquire calls whose attempts were reported.
    pub attempts_known: u64,
    /// Failed acquires by cause.
    pub failed_acquires: BTreeMap<String, u64>,
    /// Failed releases by cause.
    pub failed_releases: BTreeMap<String, u64>,
    /// Acquire histogram as `[value, count]` per recorded bucket.
    pub acquire: Vec<[u64; 2]>,
    /// Release histogram, the same way.
    pub release: Vec<[u64; 2]>,
}

impl ChildResult {
    /// Packs a run's output.
    pub fn pack(out: &RunOutput) -> Self {
        let s = &out.stats;
        let names =
            |m: &BTreeMap<&'static str, u64>| m.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Self {
            elapsed_us: u64::try_from(out.elapsed.as_micros()).unwrap_or(u64::MAX),
            per_worker: out.per_worker.clone(),
            cycles: s.cycles,
            acquire_calls: s.acquire_calls,
            attempts: s.attempts,
            attempts_known: s.attempts_known,
            failed_acquires: names(&s.failed_acquires),
            failed_releases: names(&s.failed_releases),
            acquire: buckets(&s.acquire),
            release: buckets(&s.release),
        }
    }

    /// The record it carries.
    pub fn unpack(&self) -> Result<(WorkerStats, Vec<u64>, Duration), String> {
        let causes = |m: &BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, v)| (intern(k), *v))
                .collect::<BTreeMap<_, _>>()
        };
        let stats = WorkerStats {
            acquire: restore(&self.acquire)?,
            release: restore(&self.release)?,
            cycles: self.cycles,
            acquire_calls: self.acquire_calls,
            attempts: self.attempts,
            attempts_known: self.attempts_known,
            failed_acquires: causes(&self.failed_acquires),
            failed_releases: causes(&self.failed_releases),
        };
        Ok((
            stats,
            self.per_worker.clone(),
            Duration::from_micros(self.elapsed_us),
        ))
    }
}

fn buckets(h: &Histogram<u64>) -> Vec<[u64; 2]> {
    h.iter_recorded()
        .map(|v| [v.value_iterated_to(), v.count_at_value()])
        .collect()
}

fn restore(pairs: &[[u64; 2]]) -> Result<Histogram<u64>, String> {
    let mut h = histogram();
    for &[value, count] in pairs {
        h.record_n(value, count)
            .map_err(|e| format!("a worker process sent a bad histogram value {value}: {e:?}"))?;
    }
    Ok(h)
}

/// Failure causes are `&'static str` in [`WorkerStats`]; the few names a child sends are interned.
fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// `total` split into `parts` shares that differ by at most one, larger first.
pub fn split(total: u64, parts: usize) -> Vec<u64> {
    let parts = parts.max(1) as u64;
    (0..parts)
        .map(|i| total / parts + u64::from(i < total % parts))
        .collect()
}

/// A duration as an `--option` value, in the largest unit that says it exactly (`50ms`, `10s`), so the
/// child parses it the way the parent parsed the user's value.
fn arg_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        "0".into()
    } else if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// One child's command line (after the program name).
#[allow(clippy::too_many_arguments)]
fn child_args(
    urls: &[String],
    kind: EngineKind,
    waiting: Option<Waiting>,
    workers: u64,
    keys: u64,
    budget: Option<u64>,
    w: &Workload,
    runtime: RuntimeKind,
    tag: &str,
) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "--worker-process".into(),
        "--tag".into(),
        tag.into(),
        "--quiet".into(),
        "--nodes".into(),
        urls.join(","),
        "--engine".into(),
        kind.name().into(),
        "--concurrency".into(),
        workers.to_string(),
        "--keys".into(),
        keys.to_string(),
        "--distribution".into(),
        w.distribution.to_string(),
        "--zipf-exponent".into(),
        w.zipf_exponent.to_string(),
        "--hold".into(),
        format!("{}..{}", arg_duration(w.hold.min), arg_duration(w.hold.max)),
        "--ttl".into(),
        arg_duration(w.ttl),
        "--retries".into(),
        w.retries.to_string(),
        "--retry-delay".into(),
        arg_duration(w.retry_delay),
        "--retry-jitter".into(),
        arg_duration(w.retry_jitter),
        "--warmup".into(),
        arg_duration(w.warmup),
        "--runtime".into(),
        match runtime {
            RuntimeKind::Current => "current",
            RuntimeKind::Multi => "multi",
        }
        .into(),
    ];
    if let Some(waiting) = waiting {
        a.extend(["--waiting".into(), waiting.name().into()]);
    }
    match w.stop {
        Stop::Cycles(n) => a.extend(["--cycles".into(), budget.unwrap_or(n).to_string()]),
        Stop::Duration(d) => a.extend(["--duration".into(), arg_duration(d)]),
    }
    a
}

// ---------------------------------------------------------------------------------------------------
// Parent side.

/// What the parent hears from a child.
#[derive(Debug)]
enum Event {
    Line(String),
    /// stdout closed: the child exited (or is about to).
    Closed,
}

/// The children of one run; killed by pid when dropped.
#[derive(Debug, Default)]
struct Children {
    procs: Vec<Child>,
    stdins: Vec<ChildStdin>,
    stderr: Vec<JoinHandle<String>>,
}

impl Children {
    async fn tell_all(&mut self, line: &str) -> Result<(), String> {
        for (i, stdin) in self.stdins.iter_mut().enumerate() {
            stdin
                .write_all(format!("{line}\n").as_bytes())
                .await
                .map_err(|e| format!("cannot reach worker process {}: {e}", i + 1))?;
            stdin
                .flush()
                .await
                .map_err(|e| format!("cannot reach worker process {}: {e}", i + 1))?;
        }
        Ok(())
    }

    /// The error a child printed (its last stderr line), once it has exited.
    async fn why(&mut self, i: usize) -> String {
        let status = match tokio::time::timeout(Duration::from_secs(5), self.procs[i].wait()).await
        {
            Ok(Ok(status)) => Some(status),
            _ => None,
        };
        let text = match self.stderr.get_mut(i) {
            Some(h) => tokio::time::timeout(Duration::from_secs(2), h)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default(),
            None => String::new(),
        };
        let line = text
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| l.trim_start_matches("loadgen: error: ").to_string());
        match (line, status) {
            (Some(line), _) => line,
            (None, Some(status)) => format!("exited without a result ({})", describe(status)),
            (None, None) => "stopped talking without a result".into(),
        }
    }
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => status.to_string(),
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.procs {
            // SIGKILL by pid; a child that already exited is reaped by tokio.
            let _ = child.start_kill();
        }
    }
}

/// Runs `kind` on `scenario` in `processes` loadgen processes and merges what they measured.
#[allow(clippy::too_many_arguments)]
pub async fn run_processes(
    kind: EngineKind,
    waiting: Option<Waiting>,
    ctx: &RunContext<'_>,
    runtime: RuntimeKind,
    scenario: &Scenario,
    tag: &str,
    processes: usize,
    label: &str,
) -> Result<RunOutput, String> {
    let exe: PathBuf =
        std::env::current_exe().map_err(|e| format!("cannot find loadgen's own binary: {e}"))?;
    let w = ctx.workload;
    let shares = split(scenario.concurrency as u64, processes);
    let budgets = match w.stop {
        Stop::Cycles(n) => split(n, processes).into_iter().map(Some).collect(),
        Stop::Duration(_) => vec![None; processes],
    };
    let mut kids = Children::default();
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Event)>();
    for i in 0..processes {
        let args = child_args(
            ctx.urls,
            kind,
            waiting,
            shares[i],
            scenario.keys,
            budgets[i],
            w,
            runtime,
            tag,
        );
        let mut cmd = Command::new(&exe);
        cmd.args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        // SAFETY: `die_with_parent` runs in the forked child before exec and only calls
        // async-signal-safe functions; it touches no memory of the parent.
        unsafe {
            cmd.pre_exec(crate::nodes::spawn::die_with_parent);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start worker process {}: {e}", i + 1))?;
        let (stdin, stdout, stderr) = (
            child.stdin.take().expect("piped"),
            child.stdout.take().expect("piped"),
            child.stderr.take().expect("piped"),
        );
        kids.procs.push(child);
        kids.stdins.push(stdin);
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send((i, Event::Line(line))).is_err() {
                    return;
                }
            }
            let _ = tx.send((i, Event::Closed));
        });
        kids.stderr.push(tokio::spawn(async move {
            let mut text = String::new();
            let _ = BufReader::new(stderr).read_to_string(&mut text).await;
            text
        }));
    }
    drop(tx);

    let p = processes;
    let fail = |i: usize, why: String| format!("worker process {} of {p}: {why}", i + 1);
    // Barrier 1: everyone connected.
    wait_all(&mut kids, &mut rx, ctx, "ready", READY_WITHIN, &fail).await?;
    kids.tell_all("go").await?;
    // Barrier 2: everyone warmed up.
    let slack = grace(w) + Duration::from_secs(10);
    wait_all(&mut kids, &mut rx, ctx, "warm", w.warmup + slack, &fail).await?;
    kids.tell_all("go").await?;

    let bar = progress_bar(ctx.quiet, w.stop, label, scenario);
    let start = Instant::now();
    let limit = match w.stop {
        Stop::Duration(d) => Some(start + d + slack),
        Stop::Cycles(_) => None,
    };
    let mut done = vec![0u64; p];
    let mut results: Vec<Option<ChildResult>> = vec![None; p];
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    while results.iter().any(Option::is_none) {
        let timeout = async {
            match limit {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            ev = rx.recv() => match ev {
                Some((i, Event::Line(line))) => {
                    if let Some(n) = line.strip_prefix("done ") {
                        done[i] = n.trim().parse().unwrap_or(done[i]);
                    } else if let Some(json) = line.strip_prefix("result ") {
                        let r: ChildResult = serde_json::from_str(json)
                            .map_err(|e| fail(i, format!("unreadable result: {e}")))?;
                        done[i] = r.cycles;
                        results[i] = Some(r);
                    } else {
                        return Err(fail(i, format!("unexpected line `{line}`")));
                    }
                }
                Some((i, Event::Closed)) => {
                    if results[i].is_none() {
                        let why = kids.why(i).await;
                        return Err(fail(i, why));
                    }
                }
                None => return Err("every worker process went away".into()),
            },
            why = ctx.health.lost() => return Err(why),
            _ = timeout => {
                let slow: Vec<String> = (0..p).filter(|&i| results[i].is_none()).map(|i| (i + 1).to_string()).collect();
                return Err(format!("worker processes {} still busy {slack:?} after the run ended (a node may be hung)", slow.join(",")));
            }
            _ = ticker.tick() => {
                let total: u64 = done.iter().sum();
                show_progress(&bar, w.stop, start.elapsed(), total, total);
            }
        }
    }
    bar.finish_and_clear();
    for i in 0..p {
        let status = tokio::time::timeout(Duration::from_secs(5), kids.procs[i].wait()).await;
        match status {
            Ok(Ok(s)) if s.success() => {}
            Ok(Ok(s)) => return Err(fail(i, format!("exited with {}", describe(s)))),
            Ok(Err(e)) => return Err(fail(i, e.to_string())),
            Err(_) => return Err(fail(i, "did not exit after sending its result".into())),
        }
    }
    if let Some(why) = ctx.health.check() {
        return Err(why);
    }
    let mut stats = WorkerStats::default();
    let mut per_worker = Vec::with_capacity(scenario.concurrency);
    let mut per_process = Vec::with_capacity(p);
    let mut elapsed = Duration::ZERO;
    for (i, r) in results.into_iter().enumerate() {
        let r = r.expect("every result arrived");
        let (s, workers, took) = r.unpack().map_err(|e| fail(i, e))?;
        per_process.push(s.cycles);
        stats.merge(&s);
        per_worker.extend(workers);
        elapsed = elapsed.max(took);
    }
    Ok(RunOutput {
        stats,
        per_worker,
        per_process,
        elapsed,
    })
}

/// Waits until every child has said `word` (a barrier); fails on a child's error, a lost node or time.
async fn wait_all(
    kids: &mut Children,
    rx: &mut mpsc::UnboundedReceiver<(usize, Event)>,
    ctx: &RunContext<'_>,
    word: &str,
    within: Duration,
    fail: &impl Fn(usize, String) -> String,
) -> Result<(), String> {
    let n = kids.procs.len();
    let mut said = vec![false; n];
    let until = tokio::time::Instant::now() + within;
    while said.iter().any(|s| !s) {
        tokio::select! {
            ev = rx.recv() => match ev {
                Some((i, Event::Line(line))) if line == word => said[i] = true,
                Some((i, Event::Line(line))) => {
                    return Err(fail(i, format!("said `{line}` while loadgen waited for `{word}`")))
                }
                Some((i, Event::Closed)) => {
                    let why = kids.why(i).await;
                    return Err(fail(i, why));
                }
                None => return Err("every worker process went away".into()),
            },
            why = ctx.health.lost() => return Err(why),
            _ = tokio::time::sleep_until(until) => {
                let slow: Vec<String> = (0..n).filter(|&i| !said[i]).map(|i| (i + 1).to_string()).collect();
                return Err(format!("worker processes {} did not say `{word}` within {within:?}", slow.join(",")));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------
// Child side.

/// The parent's `go` lines, and whether the parent is still there (its end of our stdin is open).
struct Gate {
    go: mpsc::UnboundedReceiver<()>,
    gone: watch::Receiver<bool>,
}

impl Gate {
    /// Reads stdin on a plain thread (a tokio stdin read would hold up the runtime's shutdown).
    fn open() -> Self {
        let (go_tx, go) = mpsc::unbounded_channel();
        let (gone_tx, gone) = watch::channel(false);
        std::thread::Builder::new()
            .name("loadgen-stdin".into())
            .spawn(move || {
                for line in std::io::stdin().lock().lines() {
                    match line {
                        Ok(l) if l.trim() == "go" => {
                            if go_tx.send(()).is_err() {
                                break;
                            }
                        }
                        Ok(_) => {}
                        Err(_) => break,
                    }
                }
                let _ = gone_tx.send(true);
            })
            .expect("a thread starts");
        Self { go, gone }
    }

    async fn wait(&mut self) -> Result<(), String> {
        self.go
            .recv()
            .await
            .ok_or_else(|| "the parent loadgen went away".to_string())
    }

    /// Resolves once the parent has closed our stdin.
    async fn gone(mut rx: watch::Receiver<bool>) {
        let _ = rx.wait_for(|g| *g).await;
    }
}

/// Writes one protocol line on stdout.
fn say(line: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

struct InChild<'a, 'b> {
    ctx: &'a RunContext<'b>,
    scenario: &'a Scenario,
    tag: &'a str,
    gate: &'a mut Gate,
}

impl Driver for InChild<'_, '_> {
    type Out = RunOutput;

    async fn drive<C: LockClient>(self, client: Arc<C>) -> Result<RunOutput, String> {
        let Self {
            ctx,
            scenario,
            tag,
            gate,
        } = self;
        let w = ctx.workload;
        let picker = Arc::new(KeyPicker::new(
            w.distribution,
            scenario.keys,
            w.zipf_exponent,
        ));
        say("ready");
        gate.wait().await?;
        if !w.warmup.is_zero() {
            phase(
                &client,
                ctx,
                scenario,
                &picker,
                tag,
                Stop::Duration(w.warmup),
                &mut |_, _| {},
            )
            .await?;
        }
        say("warm");
        gate.wait().await?;
        let mut last = Duration::ZERO;
        phase(
            &client,
            ctx,
            scenario,
            &picker,
            tag,
            w.stop,
            &mut |ctl, elapsed| {
                if elapsed >= last + PROGRESS_EVERY {
                    last = elapsed;
                    say(&format!(
                        "done {}",
                        ctl.done.load(std::sync::atomic::Ordering::Relaxed)
                    ));
                }
            },
        )
        .await
    }
}

/// The whole life of a worker process (`--worker-process`): connect, two barriers, measure, report.
pub async fn child(plan: &Plan) -> Result<(), String> {
    let tag = plan.child.as_deref().unwrap_or("00");
    let NodeSource::Existing(urls) = &plan.nodes else {
        return Err("a worker process needs --nodes".into());
    };
    let nodes = urls
        .iter()
        .map(|u| NodeUrl::parse(u))
        .collect::<Result<Vec<_>, _>>()?;
    let health = Health::start(&nodes)?;
    let ctx = RunContext {
        urls,
        health: &health,
        workload: &plan.workload,
        quiet: true,
    };
    let kind = plan.engines[0];
    let waiting = kind.has_waiting().then(|| plan.waiting[0]);
    let mut gate = Gate::open();
    let gone = Gate::gone(gate.gone.clone());
    let driver = InChild {
        ctx: &ctx,
        scenario: &plan.scenarios[0],
        tag,
        gate: &mut gate,
    };
    let out = tokio::select! {
        out = crate::run::with_client(kind, urls, &plan.workload, waiting, driver) => out?,
        () = gone => return Err("the parent loadgen went away".into()),
    };
    let json = serde_json::to_string(&ChildResult::pack(&out))
        .map_err(|e| format!("cannot encode the result: {e}"))?;
    say(&format!("result {json}"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Percentiles;

    #[test]
    fn shares() {
        assert_eq!(split(64, 4), [16, 16, 16, 16]);
        assert_eq!(split(10, 4), [3, 3, 2, 2]);
        assert_eq!(split(3, 1), [3]);
        assert_eq!(split(10, 4).iter().sum::<u64>(), 10);
    }

    #[test]
    fn durations_round_trip_exactly() {
        for d in [
            Duration::ZERO,
            Duration::from_millis(50),
            Duration::from_secs(10),
            Duration::from_micros(1_500),
            Duration::from_nanos(1_000_000_001),
        ] {
            assert_eq!(
                crate::units::parse_duration(&arg_duration(d))
                    .unwrap()
                    .as_micros(),
                d.as_micros(),
                "{d:?}"
            );
        }
    }

    #[test]
    fn result_round_trip_keeps_every_bucket() {
        let mut a = WorkerStats::default();
        for v in [1u64, 7, 100, 1_234, 98_765, 4_000_000, 59_000_000] {
            a.acquire.record_n(v, v % 7 + 1).unwrap();
            a.release.record(v / 3 + 1).unwrap();
        }
        a.cycles = 42;
        a.acquire_calls = 50;
        a.attempts = 61;
        a.attempts_known = 42;
        a.failed_acquires.insert("Contended", 8);
        let out = RunOutput {
            stats: a.clone(),
            per_worker: vec![20, 22],
            per_process: Vec::new(),
            elapsed: Duration::from_millis(5_000),
        };
        let json = serde_json::to_string(&ChildResult::pack(&out)).unwrap();
        let back: ChildResult = serde_json::from_str(&json).unwrap();
        let (s, per_worker, elapsed) = back.unpack().unwrap();
        assert_eq!(per_worker, [20, 22]);
        assert_eq!(elapsed, Duration::from_secs(5));
        assert_eq!(
            (s.cycles, s.acquire_calls, s.attempts, s.attempts_known),
            (42, 50, 61, 42)
        );
        assert_eq!(s.failed_acquires["Contended"], 8);
        assert_eq!(s.acquire.len(), a.acquire.len());
        assert_eq!(Percentiles::of(&s.acquire), Percentiles::of(&a.acquire));
        assert_eq!(Percentiles::of(&s.release), Percentiles::of(&a.release));
        assert_eq!(s.acquire.min(), a.acquire.min());
        // Merging two children equals recording everything in one histogram.
        let mut merged = WorkerStats::default();
        merged.merge(&s);
        merged.merge(&s);
        let mut twice = a.acquire.clone();
        twice.add(&a.acquire).unwrap();
        assert_eq!(Percentiles::of(&merged.acquire), Percentiles::of(&twice));
    }

    #[test]
    fn child_arguments_parse_back_into_the_same_workload() {
        use clap::Parser as _;
        let parent = crate::cli::Options::try_parse_from([
            "loadgen",
            "--concurrency",
            "64",
            "--keys",
            "4",
            "--hold",
            "1ms..3ms",
            "--ttl",
            "2s",
            "--retry-delay",
            "5ms",
            "--retry-jitter",
            "7ms",
            "--retries",
            "20",
            "--warmup",
            "300ms",
            "--duration",
            "1500ms",
            "--distribution",
            "zipf",
            "--zipf-exponent",
            "1.25",
        ])
        .unwrap()
        .plan()
        .unwrap();
        let urls = vec![
            "redis://127.0.0.1:1".to_string(),
            "redis://127.0.0.1:2".into(),
        ];
        let args = child_args(
            &urls,
            EngineKind::Redlock,
            Some(Waiting::Plain),
            16,
            4,
            None,
            &parent.workload,
            RuntimeKind::Multi,
            "07",
        );
        let child =
            crate::cli::Options::try_parse_from(std::iter::once("loadgen".into()).chain(args))
                .unwrap()
                .plan()
                .unwrap();
        assert_eq!(child.child.as_deref(), Some("07"));
        assert!(child.quiet);
        assert_eq!(child.nodes, NodeSource::Existing(urls));
        assert_eq!(child.engines, [EngineKind::Redlock]);
        assert_eq!(child.waiting, [Waiting::Plain]);
        assert_eq!(child.runtime, RuntimeKind::Multi);
        assert_eq!(
            (child.scenarios[0].concurrency, child.scenarios[0].keys),
            (16, 4)
        );
        let (a, b) = (&parent.workload, &child.workload);
        assert_eq!(
            (
                a.hold,
                a.ttl,
                a.retries,
                a.retry_delay,
                a.retry_jitter,
                a.stop,
                a.warmup
            ),
            (
                b.hold,
                b.ttl,
                b.retries,
                b.retry_delay,
                b.retry_jitter,
                b.stop,
                b.warmup
            )
        );
        assert_eq!(
            (a.distribution, a.zipf_exponent),
            (b.distribution, b.zipf_exponent)
        );
    }
}
