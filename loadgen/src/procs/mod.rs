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
//! The parent keeps every child in a `Children` group that kills them by pid (SIGKILL) when dropped:
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
//!
//! # Layout
//! - this file: the parent — starting the children, the two barriers, progress, merging;
//! - [`piped`]: one child with its pipes — started, its lines read, why it exited (the election
//!   scenario's processes are started the same way);
//! - `wire.rs`: what crosses the pipes — the children's command line and their [`ChildResult`];
//! - `child.rs`: a child's side — the barriers' other end, then the same [`crate::run::run_with`] as an
//!   in-process run.

mod child;
pub mod piped;
mod wire;

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use crate::cli::RuntimeKind;
use crate::engines::{EngineKind, Waiting};
use crate::overload::cpu::CpuUse;
use crate::run::{grace, progress_bar, show_progress, RunContext, RunOutput};
use crate::stats::WorkerStats;
use crate::workload::{Scenario, Stop};

pub use child::child;
use piped::{Event, Piped};
use wire::child_args;
pub use wire::{split, ChildResult};

/// How long the children may take to start and connect.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// The children of one run; killed by pid when dropped.
#[derive(Debug, Default)]
struct Children {
    procs: Vec<Piped>,
}

impl Children {
    async fn tell_all(&mut self, line: &str) -> Result<(), String> {
        for (i, p) in self.procs.iter_mut().enumerate() {
            let Some(stdin) = p.stdin.as_mut() else {
                continue;
            };
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
        self.procs[i]
            .why(
                |status| format!("exited without a result ({})", describe(status)),
                "stopped talking without a result",
            )
            .await
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
        for p in &mut self.procs {
            // SIGKILL by pid; a child that already exited is reaped by tokio.
            let _ = p.child.start_kill();
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
        let child = Piped::spawn(&exe, &args, i, tx.clone())
            .map_err(|e| format!("cannot start worker process {}: {e}", i + 1))?;
        kids.procs.push(child);
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
        let status = tokio::time::timeout(Duration::from_secs(5), kids.procs[i].child.wait()).await;
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
    let mut cpu = CpuUse::default();
    for (i, r) in results.into_iter().enumerate() {
        let r = r.expect("every result arrived");
        let child = r.cpu();
        cpu.client += child.client;
        cpu.server_s = match (cpu.server_s, child.server_s) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        cpu.server_calls = cpu.server_calls.max(child.server_calls);
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
        cpu,
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
