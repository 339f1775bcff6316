//! How the renderers write numbers and phrases they share: grouped counts, durations in µs, ratios,
//! and a scenario's process count.

use crate::workload::Scenario;

use super::record::{Report, RunRecord};

/// `" in 4 processes"` when the scenario's runs were split among processes, else empty.
pub fn in_processes(report: &Report, scenario: &Scenario) -> String {
    let most = report
        .runs
        .iter()
        .filter(|r| r.scenario.id == scenario.id)
        .filter_map(|r| r.processes)
        .max()
        .unwrap_or(1);
    if most > 1 {
        format!(" in {most} processes")
    } else {
        String::new()
    }
}

/// The figures of a run's row that the table and the Markdown both show, in their column order:
/// engine, cycles/s, acquire p50, p90, p99, p99.9 and max, release p50 and p99, attempts per
/// acquire, fairness; `none` where a run has no such figure.
pub fn run_figures(run: &RunRecord, none: &str) -> [String; 11] {
    let (a, r) = (run.acquire_pct(), run.release_pct());
    let lat = |p: Option<f64>| p.map_or_else(|| none.to_string(), micros);
    [
        run.label(),
        group(run.cycles_per_s),
        lat(a.map(|p| p.p50)),
        lat(a.map(|p| p.p90)),
        lat(a.map(|p| p.p99)),
        lat(a.map(|p| p.p999)),
        lat(a.map(|p| p.max)),
        lat(r.map(|p| p.p50)),
        lat(r.map(|p| p.p99)),
        run.attempts_per_acquire
            .map_or_else(|| none.to_string(), |v| format!("{v:.2}")),
        run.fairness
            .map_or_else(|| none.to_string(), |v| format!("{v:.3}")),
    ]
}

/// `1234567.8` as `1 234 568`-style text with thin grouping (`1,234,568`).
pub fn group(n: f64) -> String {
    let s = format!("{:.0}", n.max(0.0));
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Microseconds as `850µs`, `1.23ms`, `2.50s`.
pub fn micros(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.0}µs")
    } else if us < 1_000_000.0 {
        format!("{:.2}ms", us / 1_000.0)
    } else {
        format!("{:.2}s", us / 1_000_000.0)
    }
}

/// `2.51x`, or `-`.
pub fn times(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2}x"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting() {
        assert_eq!(group(1_234_567.8), "1,234,568");
        assert_eq!(group(12.0), "12");
        assert_eq!(micros(850.0), "850µs");
        assert_eq!(micros(1_234.0), "1.23ms");
        assert_eq!(micros(2_500_000.0), "2.50s");
    }
}
