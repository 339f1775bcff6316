//! `--scenario contention`: the plain lock and the fair lock across processes, side by side,
//! in one invocation on one node set.
//!
//! 64 workers on 4 keys in three layouts, in this order: one process (the reference every row's
//! `vs 1p` divides by), 4 processes x 16 workers, 16 processes x 4 workers. In each layout the
//! exclusive lock (`acquire`), then the fair lock (`acquire_fair`). Engines that have only an
//! exclusive lock (rslock, raw) run beside the exclusive lock only. Each row is an ordinary run
//! measured by [`crate::measure`], so it is made exactly as a `--concurrency 64 --keys 4 --processes
//! P [--lock fair]` run would be; each has its own key tag, so no row meets a previous row's keys (a
//! fair lock's queue, a plain lock's leftover TTL).
//!
//! The scenario picks the layout and the lock of each row, so the plan refuses `--lock`,
//! `--processes`, `--concurrency` and `--keys` with it; every other workload option applies to every
//! row (`--duration` and `--warmup` per row). The rows, their same-run ratios and the goals are
//! rendered by [`crate::report::contention`].

use crate::cli::Plan;
use crate::engines::EngineKind;
use crate::measure::{measure, status_line, RunSpec};
use crate::report::record::ContentionRow;
use crate::run::RunContext;
use crate::workload::{
    LockKind, Scenario, Stop, Workload, CONTENTION_KEYS, CONTENTION_LAYOUTS, CONTENTION_LOCKS,
    CONTENTION_WORKERS,
};

/// Runs every row on `engines` (and every `--waiting` mode of the redlock engines), in order.
pub async fn run(
    plan: &Plan,
    ctx: &RunContext<'_>,
    nodes: usize,
    engines: &[EngineKind],
) -> Result<Vec<ContentionRow>, String> {
    let mut rows = Vec::new();
    let mut run_no = 0;
    for layout in CONTENTION_LAYOUTS {
        for lock in CONTENTION_LOCKS {
            let workload = Workload {
                lock,
                ..ctx.workload.clone()
            };
            let row_ctx = RunContext {
                urls: ctx.urls,
                health: ctx.health,
                workload: &workload,
                quiet: ctx.quiet,
            };
            let scenario = Scenario::contention(layout, lock);
            for &engine in engines {
                if lock != LockKind::Exclusive && !engine.takes_lock_kinds() {
                    continue;
                }
                for waiting in engine.waiting_modes(&plan.waiting) {
                    run_no += 1;
                    let tag = format!("k{run_no:02}");
                    let spec = RunSpec {
                        engine,
                        waiting,
                        scenario: &scenario,
                        tag: &tag,
                        processes: layout.processes,
                        runtime: plan.runtime,
                        nodes,
                    };
                    let record = measure(spec, &row_ctx).await?;
                    if !plan.quiet {
                        eprintln!("{}", status_line(&record));
                    }
                    rows.push(ContentionRow { lock, record });
                }
            }
        }
    }
    Ok(rows)
}

/// What the report says about how the rows were made.
pub fn notes(w: &Workload) -> Vec<String> {
    let each = match w.stop {
        Stop::Duration(d) => format!("{d:?} measured"),
        Stop::Cycles(n) => format!("{n} acquire calls"),
    };
    vec![
        format!(
            "contention: {CONTENTION_WORKERS} workers on {CONTENTION_KEYS} keys in one process (the reference), in 4 processes x 16 and in 16 processes x 4, each with the exclusive lock (acquire) and the fair lock (acquire_fair; redlock engines only, rslock and raw have no fair lock); {each} after {:?} of warm-up per row, each row on keys of its own; the worker processes start together after a start barrier, histograms and per-worker counts merged, cycles/s over the longest process's measured time",
            w.warmup
        ),
        "contention columns: vs 1p = cycles/s / the same engine's exclusive lock in one process (this run); fairness = Jain's index over the 64 workers, procs = over the processes' cycle counts; overtakes = max per grant / mean per grant; server µs/cycle = INFO cpu (user+sys, summed over the nodes) over the measured phase / cycles (with several processes each reads the servers over its own measured phase, the largest reading counts); client µs/cycle = getrusage of the loadgen process(es) running the workers, summed, loadgen's own loop included".into(),
        "contention ratios: a/b of the same layout in this run; fair/exclusive divides the fair lock's figure by the same engine's exclusive lock's; the targets are the project's for redlock (its default waiting); 'max overtakes not higher than before' needs the previous build's figure and is not checked here".into(),
    ]
}
