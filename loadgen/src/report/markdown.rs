//! The `--out` Markdown summary: the same numbers as the table, for a README or a pull request.

use std::fmt::Write;

use super::format::{group, in_processes, run_figures, times};
use super::ratios::{goals, ratios};
use super::record::Report;

/// The summary; `svg` is the plot's file name next to it.
pub fn render(report: &Report, svg: &str) -> String {
    let mut md = String::new();
    let (m, v, w) = (
        &report.testbed.machine,
        &report.testbed.versions,
        &report.workload,
    );
    let _ = writeln!(md, "# loadgen results\n");
    let _ = writeln!(md, "Command: `{}`\n", report.testbed.command);
    let _ = writeln!(md, "- Machine: {} cores, {} ({})", m.cores, m.cpu, m.arch);
    let _ = writeln!(md, "- `uname -a`: `{}`", m.uname);
    let load = |l: Option<f64>| l.map_or_else(|| "?".into(), |l| format!("{l:.2}"));
    let _ = writeln!(
        md,
        "- Load average (1 min) at start / end: {} / {}",
        load(m.loadavg_start),
        load(m.loadavg_end)
    );
    let _ = writeln!(
        md,
        "- Servers: {} ({} nodes, {}; first node's redis_version {})",
        super::table::servers(report),
        report.testbed.nodes,
        report.testbed.node_source,
        v.redis
    );
    let _ = writeln!(
        md,
        "- redlock-engine {} (commit {}), rslock {} (redis-rs {}), fred {}, tokio {}, {}",
        v.redlock_engine, v.redlock_engine_commit, v.rslock, v.redis_rs, v.fred, v.tokio, v.rustc
    );
    let _ = writeln!(
        md,
        "- Workload: hold {}, ttl {:?}, retries {}, retry delay {:?} + jitter {:?}, {} keys, runtime {}, warm-up {:?}\n",
        w.hold,
        w.ttl,
        w.retries,
        w.retry_delay,
        w.retry_jitter,
        w.distribution,
        report.runtime.label(),
        w.warmup
    );
    let _ = writeln!(md, "![acquire latency by percentile]({svg})\n");
    let all_ratios = ratios(report);
    for scenario in &report.scenarios {
        let _ = writeln!(md, "## {}\n", scenario.label);
        let procs = in_processes(report, scenario);
        if !procs.is_empty() {
            let _ = writeln!(md, "{} workers{procs}.\n", scenario.concurrency);
        }
        let _ = writeln!(
            md,
            "| engine | cycles/s | acquire p50 | p90 | p99 | p99.9 | max | release p50 | release p99 | attempts/acquire | fairness | max overtakes | failed |"
        );
        let _ = writeln!(md, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|");
        for run in report.runs.iter().filter(|r| r.scenario.id == scenario.id) {
            let failed: Vec<String> = run
                .failed_acquires
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .chain(
                    run.failed_releases
                        .iter()
                        .map(|(k, v)| format!("release {k}: {v}")),
                )
                .collect();
            let mut cells = run_figures(run, "–").to_vec();
            cells.push(
                run.overtakes
                    .map_or_else(|| "–".into(), |o| o.max.to_string()),
            );
            cells.push(if failed.is_empty() {
                "–".into()
            } else {
                failed.join(", ")
            });
            let _ = writeln!(md, "| {} |", cells.join(" | "));
            if let Some(native) = run.ceiling.as_ref().and_then(|c| c.native) {
                let _ = writeln!(
                    md,
                    "| ceiling[native] (DELIFEQ) | {} | – | – | – | – | – | – | – | – | – | – | – |",
                    group(native.cycles_per_s)
                );
            }
        }
        let split: Vec<String> = report
            .runs
            .iter()
            .filter(|r| r.scenario.id == scenario.id)
            .filter_map(|r| {
                r.process_fairness().map(|f| {
                    let counts: Vec<String> =
                        r.per_process.iter().map(|&c| group(c as f64)).collect();
                    format!("{}: {} (Jain {f:.3})", r.label(), counts.join(" / "))
                })
            })
            .collect();
        if !split.is_empty() {
            let _ = writeln!(md, "\nCycles per process: {}.", split.join("; "));
        }
        let rows: Vec<_> = all_ratios
            .iter()
            .filter(|r| r.scenario == scenario.id)
            .collect();
        if !rows.is_empty() {
            let _ = writeln!(
                md,
                "\n| ratio | cycles/s | acquire p50 | acquire p99 | fairness |\n|---|--:|--:|--:|--:|"
            );
            for r in rows {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} |",
                    r.name(),
                    times(r.cycles_per_s),
                    times(r.acquire_p50),
                    times(r.acquire_p99),
                    times(r.fairness)
                );
            }
        }
        let _ = writeln!(md);
    }
    let goals = goals(report);
    if !goals.is_empty() {
        let _ = writeln!(
            md,
            "## Regression targets\n\n{}.\n\n| scenario | target | measured | met |\n|---|---|--:|---|",
            super::ratios::TARGETS_HEADING
        );
        for g in goals {
            let _ = writeln!(
                md,
                "| ({}) | {} {} {} | {} | {} |",
                g.scenario,
                g.what,
                g.op,
                g.target,
                g.measured.map_or_else(|| "–".into(), |m| format!("{m:.2}")),
                g.verdict()
            );
        }
        let _ = writeln!(md);
    }
    // The contention and overload scenarios' tables are fixed-width text; shown as such rather than
    // kept twice.
    let contention = super::contention::render(&report.contention);
    if !contention.is_empty() {
        let _ = writeln!(
            md,
            "\n## Contention across processes\n\n```text{contention}```\n"
        );
    }
    let overload = crate::overload::report::render(&report.overload, &report.overload_vs_b());
    if !overload.is_empty() {
        let _ = writeln!(md, "\n## Overload scenarios\n\n```text{overload}```\n");
    }
    if !report.notes.is_empty() {
        let _ = writeln!(md, "## Notes\n");
        for note in &report.notes {
            let _ = writeln!(md, "- {note}");
        }
    }
    md
}
