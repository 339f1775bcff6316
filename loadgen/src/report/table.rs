//! The text table printed on stdout.

use std::fmt::Write;

use super::format::{group, in_processes, run_figures, times};
use super::ratios::{goals, ratios};
use super::record::{Report, RunRecord};

/// The whole report as text.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let w = &report.workload;
    let _ = writeln!(
        out,
        "loadgen: {} nodes ({}), {}, {} cores, {} runtime, hold {}, ttl {:?}, retries {} x ({:?} + jitter {:?}), lock {}",
        report.testbed.nodes,
        report.testbed.node_source,
        // The first node's server (`redis 7.0.15`, `valkey 9.1.2`); every node's on the next line.
        report.testbed.servers.first().map_or_else(
            || format!("redis {}", report.testbed.versions.redis),
            |s| s.label()
        ),
        report.testbed.machine.cores,
        report.runtime.label(),
        w.hold,
        w.ttl,
        w.retries,
        w.retry_delay,
        w.retry_jitter,
        // The contention scenario takes both locks, one per row.
        if report.contention.is_empty() {
            w.lock.to_string()
        } else {
            "per row".into()
        },
    );
    let _ = writeln!(out, "servers: {}", servers(report));
    let all_ratios = ratios(report);
    for scenario in &report.scenarios {
        let _ = writeln!(
            out,
            "\n{}  [{} workers{}, {} keys, {}]",
            scenario.label,
            scenario.concurrency,
            in_processes(report, scenario),
            group(scenario.keys as f64),
            w.distribution
        );
        let _ = writeln!(
            out,
            "  {:<16} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>13}  failed",
            "engine",
            "cycles/s",
            "acq p50",
            "p90",
            "p99",
            "p99.9",
            "max",
            "rel p50",
            "rel p99",
            "att/acq",
            "fairness",
            "overtakes",
            "cpu µs/cycle"
        );
        for run in report.runs.iter().filter(|r| r.scenario.id == scenario.id) {
            let _ = writeln!(out, "  {}", row(run));
            if let Some(native) = run.ceiling.as_ref().and_then(|c| c.native) {
                let _ = writeln!(
                    out,
                    "  {:<16} {:>10}  (SET NX PX + DELIFEQ)",
                    "ceiling[native]",
                    group(native.cycles_per_s)
                );
            }
        }
        for r in all_ratios.iter().filter(|r| r.scenario == scenario.id) {
            let fairness = if r.waiting {
                format!("   fairness {:>7}", times(r.fairness))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "  {:<30} cycles/s {:>7}   acquire p50 {:>7}   p99 {:>7}{fairness}",
                r.name(),
                times(r.cycles_per_s),
                times(r.acquire_p50),
                times(r.acquire_p99)
            );
        }
    }
    let goals = goals(report);
    if !goals.is_empty() {
        let _ = writeln!(out, "\n{}:", super::ratios::TARGETS_HEADING);
        for g in goals {
            let _ = writeln!(out, "{}", g.line(28, 6));
        }
    }
    out.push_str(&super::contention::render(&report.contention));
    out.push_str(&crate::overload::report::render(
        &report.overload,
        &report.overload_vs_b(),
    ));
    if !report.notes.is_empty() {
        let _ = writeln!(out, "\nnotes:");
        for note in &report.notes {
            let _ = writeln!(out, "  - {note}");
        }
    }
    out
}

fn row(run: &RunRecord) -> String {
    let dash = || "-".to_string();
    let f = run_figures(run, "-");
    let failed: Vec<String> = run
        .failed_acquires
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let failed_rel: Vec<String> = run
        .failed_releases
        .iter()
        .map(|(k, v)| format!("release:{k}={v}"))
        .collect();
    let failed = [failed, failed_rel].concat();
    format!(
        "{:<16} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>13}  {}",
        f[0],
        f[1],
        f[2],
        f[3],
        f[4],
        f[5],
        f[6],
        f[7],
        f[8],
        f[9],
        f[10],
        // Max over the grants, then the mean per grant.
        run.overtakes
            .map_or_else(dash, |o| format!("{}/{:.2}", o.max, o.per_grant)),
        cpu(run),
        if failed.is_empty() {
            "-".into()
        } else {
            failed.join(" ")
        },
    )
}

/// `client/server` CPU per cycle in µs (`17.2/41.0`), or `-`.
fn cpu(run: &RunRecord) -> String {
    let one = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.1}"));
    match run.client_cpu_us_per_cycle() {
        None => "-".into(),
        client => format!("{}/{}", one(client), one(run.server_cpu_us_per_cycle())),
    }
}

/// The servers in one line, grouped by name and version: `valkey 9.1.2 on every node (5)`, or
/// `redis 7.0.15 on redis://127.0.0.1:7000, redis://127.0.0.1:7001; valkey 9.1.2 on …`.
pub fn servers(report: &Report) -> String {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for s in &report.testbed.servers {
        let label = s.label();
        match groups.iter_mut().find(|(l, _)| *l == label) {
            Some((_, nodes)) => nodes.push(&s.node),
            None => groups.push((label, vec![&s.node])),
        }
    }
    match groups.as_slice() {
        [] => "unknown".into(),
        [(label, nodes)] => format!("{label} on every node ({})", nodes.len()),
        _ => groups
            .iter()
            .map(|(label, nodes)| format!("{label} on {}", nodes.join(", ")))
            .collect::<Vec<_>>()
            .join("; "),
    }
}
