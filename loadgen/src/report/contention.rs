//! The contention scenario's results (run by [`crate::contention`]; its rows are
//! [`ContentionRow`]s): each row's rate against the one-process reference, the same-run ratios
//! (redlock against rslock, the fair lock against the exclusive lock), the regression targets, and the
//! text table, [`render`]. Their `--json` part (under the document's `contention` key, [`Compare`]
//! among its structs) is built in [`super::json`].

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::engines::{EngineKind, Waiting};
use crate::workload::LockKind;

use super::format::{group, micros, times};
use super::ratios::Goal;
use super::record::{ContentionRow, RunRecord};

/// `row`'s cycles/s over the same engine's exclusive lock in one process, in the same run.
pub fn vs_one_process(rows: &[ContentionRow], row: &ContentionRow) -> Option<f64> {
    let base = rows
        .iter()
        .find(|r| r.processes() == 1 && r.lock == LockKind::Exclusive && r.label() == row.label())?
        .record
        .cycles_per_s;
    (base > 0.0).then(|| row.record.cycles_per_s / base)
}

/// One same-run ratio `a / b` in one layout: redlock over rslock (both exclusive), or an engine's fair
/// lock over its exclusive lock. Each figure is null when either side lacks it or `b` is zero.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compare {
    /// The layout.
    pub layout: &'static str,
    /// `redlock/rslock` or `redlock fair/exclusive`.
    pub name: String,
    /// a ÷ b, cycles/s (above 1: a is faster).
    pub cycles_per_s: Option<f64>,
    /// a ÷ b, acquire p99 (below 1: a is faster).
    pub acquire_p99: Option<f64>,
    /// a ÷ b, acquire p99.9.
    pub acquire_p999: Option<f64>,
    /// a ÷ b, the servers' CPU per cycle.
    pub server_cpu_us_per_cycle: Option<f64>,
    /// a ÷ b, the most overtakes of one grant.
    pub max_overtakes: Option<f64>,
}

impl Compare {
    fn of(layout: &'static str, name: String, a: &RunRecord, b: &RunRecord) -> Self {
        let div = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) if y > 0.0 && x.is_finite() => Some(x / y),
            _ => None,
        };
        let pct = |r: &RunRecord, f: fn(&crate::stats::Percentiles) -> f64| {
            r.acquire_pct().map(|p| f(&p))
        };
        let most = |r: &RunRecord| r.overtakes.map(|o| o.max as f64);
        Self {
            layout,
            name,
            cycles_per_s: div(Some(a.cycles_per_s), Some(b.cycles_per_s)),
            acquire_p99: div(pct(a, |p| p.p99), pct(b, |p| p.p99)),
            acquire_p999: div(pct(a, |p| p.p999), pct(b, |p| p.p999)),
            server_cpu_us_per_cycle: div(a.server_cpu_us_per_cycle(), b.server_cpu_us_per_cycle()),
            max_overtakes: div(most(a), most(b)),
        }
    }
}

/// The layouts of `rows`, in run order.
fn layouts(rows: &[ContentionRow]) -> Vec<&'static str> {
    let mut out = Vec::new();
    for r in rows {
        if !out.contains(&r.layout()) {
            out.push(r.layout());
        }
    }
    out
}

/// Every same-run ratio the rows support, layout by layout.
pub fn compare(rows: &[ContentionRow]) -> Vec<Compare> {
    let mut out = Vec::new();
    for layout in layouts(rows) {
        let of = || rows.iter().filter(move |r| r.layout() == layout);
        let exclusive = |r: &&ContentionRow| r.lock == LockKind::Exclusive;
        if let Some(rs) = of().find(|r| r.record.engine == EngineKind::Rslock && exclusive(r)) {
            for r in of().filter(|r| r.record.engine.takes_lock_kinds() && exclusive(r)) {
                let name = format!("{}/rslock", r.label());
                out.push(Compare::of(layout, name, &r.record, &rs.record));
            }
        }
        for fair in of().filter(|r| r.lock == LockKind::Fair) {
            if let Some(ex) = of().find(|r| exclusive(r) && r.label() == fair.label()) {
                let name = format!("{} fair/exclusive", fair.label());
                out.push(Compare::of(layout, name, &fair.record, &ex.record));
            }
        }
    }
    out
}

/// The regression targets, measured on redlock (its default waiting when both modes ran); empty without a
/// redlock row.
pub fn goals(rows: &[ContentionRow]) -> Vec<Goal> {
    let find = |layout: &str, lock: LockKind| {
        let mut of = rows.iter().filter(move |r| {
            r.layout() == layout && r.lock == lock && r.record.engine == EngineKind::Redlock
        });
        let first = of.clone().next();
        of.find(|r| r.record.waiting != Some(Waiting::Plain))
            .or(first)
    };
    let Some(redlock) = find("1x64", LockKind::Exclusive).map(ContentionRow::label) else {
        return Vec::new();
    };
    let all = compare(rows);
    let fair = |layout: &str| {
        let name = format!("{redlock} fair/exclusive");
        all.iter()
            .find(move |c| c.layout == layout && c.name == name)
    };
    let p999_ms = |layout: &str| {
        find(layout, LockKind::Exclusive)
            .and_then(|r| r.record.acquire_pct())
            .map(|p| p.p999 / 1e3)
    };
    let goal = |scenario, what, op, target, measured| Goal {
        scenario,
        what,
        op,
        target,
        measured,
    };
    let mut out = vec![
        goal("4x16", "exclusive p99.9 ms", "<=", 10.0, p999_ms("4x16")),
        goal(
            "4x16",
            "exclusive cycles/s vs 1p",
            ">=",
            0.5,
            find("4x16", LockKind::Exclusive).and_then(|r| vs_one_process(rows, r)),
        ),
        goal("16x4", "exclusive p99.9 ms", "<=", 20.0, p999_ms("16x4")),
    ];
    for layout in ["4x16", "16x4"] {
        let f = fair(layout);
        out.push(goal(
            layout,
            "fair/exclusive cycles/s",
            ">=",
            0.5,
            f.and_then(|c| c.cycles_per_s),
        ));
        out.push(goal(
            layout,
            "fair/exclusive server µs/cycle",
            "<=",
            4.0,
            f.and_then(|c| c.server_cpu_us_per_cycle),
        ));
    }
    out
}

/// The rows, ratios and goals as text; empty without rows.
pub fn render(rows: &[ContentionRow]) -> String {
    let mut out = String::new();
    let Some(first) = rows.first() else {
        return out;
    };
    let s = &first.record.scenario;
    let _ = writeln!(
        out,
        "\ncontention across processes: {} workers on {} keys per row; layout = processes x workers per process",
        s.concurrency, s.keys
    );
    let _ = writeln!(
        out,
        "  {:<6} {:<9} {:<16} {:>10} {:>6} {:>9} {:>9} {:>9} {:>8} {:>6} {:>10} {:>9} {:>9} {:>9}  failed",
        "layout",
        "lock",
        "engine",
        "cycles/s",
        "vs 1p",
        "acq p50",
        "p99",
        "p99.9",
        "fairness",
        "procs",
        "overtakes",
        "srv µs/c",
        "cli µs/c",
        "node cmd/g"
    );
    for row in rows {
        let _ = writeln!(out, "  {}", line(rows, row));
    }
    let all = compare(rows);
    if !all.is_empty() {
        let _ = writeln!(out, "\n  same run, a/b:");
    }
    for c in &all {
        let _ = writeln!(
            out,
            "  {:<6} {:<30} cycles/s {:>7}  p99 {:>7}  p99.9 {:>7}  server µs/cycle {:>7}  max overtakes {:>7}",
            c.layout,
            c.name,
            times(c.cycles_per_s),
            times(c.acquire_p99),
            times(c.acquire_p999),
            times(c.server_cpu_us_per_cycle),
            times(c.max_overtakes)
        );
    }
    let goals = goals(rows);
    if !goals.is_empty() {
        let _ = writeln!(
            out,
            "\ncontention {} for redlock:",
            super::ratios::TARGETS_HEADING
        );
    }
    for g in goals {
        let _ = writeln!(out, "{}", g.line(32, 7));
    }
    out
}

fn line(rows: &[ContentionRow], row: &ContentionRow) -> String {
    let r = &row.record;
    let dash = || "-".to_string();
    let a = r.acquire_pct();
    let lat = |f: fn(&crate::stats::Percentiles) -> f64| a.map_or_else(dash, |p| micros(f(&p)));
    let one = |v: Option<f64>| v.map_or_else(dash, |v| format!("{v:.1}"));
    let failed = failures(&r.failed_acquires, &r.failed_releases);
    format!(
        "{:<6} {:<9} {:<16} {:>10} {:>6} {:>9} {:>9} {:>9} {:>8} {:>6} {:>10} {:>9} {:>9} {:>9}  {}",
        row.layout(),
        row.lock.to_string(),
        row.label(),
        group(r.cycles_per_s),
        vs_one_process(rows, row).map_or_else(dash, |v| format!("{v:.2}x")),
        lat(|p| p.p50),
        lat(|p| p.p99),
        lat(|p| p.p999),
        r.fairness.map_or_else(dash, |v| format!("{v:.3}")),
        r.process_fairness()
            .map_or_else(dash, |v| format!("{v:.3}")),
        // Max over the grants, then the mean per grant.
        r.overtakes
            .map_or_else(dash, |o| format!("{}/{:.2}", o.max, o.per_grant)),
        one(r.server_cpu_us_per_cycle()),
        one(r.client_cpu_us_per_cycle()),
        r.node_commands_per_grant()
            .map_or_else(dash, |v| format!("{v:.2}")),
        failed
    )
}

/// `Contended=3 release:NotOwner=1`, or `-`.
fn failures(acquires: &BTreeMap<String, u64>, releases: &BTreeMap<String, u64>) -> String {
    let all: Vec<String> = acquires
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .chain(releases.iter().map(|(k, v)| format!("release:{k}={v}")))
        .collect();
    if all.is_empty() {
        "-".into()
    } else {
        all.join(" ")
    }
}

#[cfg(test)]
#[path = "contention_tests.rs"]
mod tests;
