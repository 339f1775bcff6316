//! The overload scenarios' text table and ratios. Reads the records of [`super::Records`] and the
//! ordinary runs' throughput, given as `(scenario id, label, cycles/s)`, so it depends on nothing in
//! `report` (which depends on it).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::Records;

/// `{label: overload cycles/s ÷ (b) cycles/s}` for every engine that ran both in this invocation.
pub fn overload_vs_b(runs: &[(&str, String, f64)]) -> BTreeMap<String, f64> {
    let of = |id: &str, label: &str| {
        runs.iter()
            .find(|(s, l, _)| *s == id && l == label)
            .map(|r| r.2)
    };
    runs.iter()
        .filter(|(id, _, _)| *id == "overload")
        .filter_map(|(_, label, rate)| Some((label.clone(), rate / of("b", label)?.max(1e-9))))
        .collect()
}

/// The burst and held tables and the overload ratios; empty when there is nothing to show.
pub fn render(records: &Records, vs_b: &BTreeMap<String, f64>) -> String {
    let mut out = String::new();
    let opt = |v: Option<f64>, digits: usize| {
        v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.digits$}"))
    };
    if !records.burst.is_empty() {
        let _ = writeln!(
            out,
            "\nburst: B acquires on distinct keys at once, each its own task; goodput = successes / drain time"
        );
        let _ = writeln!(
            out,
            "  {:<16} {:>8} {:>8} {:>9} {:>10} {:>10} {:>8} {:>10} {:>10}  failures",
            "engine",
            "burst",
            "ok %",
            "drain s",
            "goodput/s",
            "(b) cyc/s",
            "vs (b)",
            "acq p50",
            "acq max"
        );
        for r in &records.burst {
            let _ = writeln!(
                out,
                "  {:<16} {:>8} {:>8.2} {:>9.2} {:>10.0} {:>10} {:>8} {:>9.0}ms {:>9.0}ms  {:?}",
                r.label,
                r.burst,
                r.success_rate * 100.0,
                r.drain_s,
                r.goodput_per_s,
                opt(r.b_cycles_per_s, 0),
                opt(r.goodput_vs_b, 2),
                r.acquire_us.p50 / 1e3,
                r.acquire_us.max / 1e3,
                r.failures
            );
        }
        same_run_ratios(
            &mut out,
            records
                .burst
                .iter()
                .map(|r| (r.label.as_str(), r.burst, r.goodput_per_s)),
        );
    }
    if !records.held.is_empty() {
        let _ = writeln!(
            out,
            "\nheld: H renewed locks (acquire_renewed) held; CPU and renewals over the hold"
        );
        let _ = writeln!(
            out,
            "  {:<16} {:>8} {:>9} {:>7} {:>11} {:>11} {:>11} {:>11}  failures",
            "engine",
            "held",
            "acquired",
            "lost",
            "renewals/s",
            "expected/s",
            "client µs/r",
            "server µs/r"
        );
        for r in &records.held {
            let int = |v: Option<u64>| v.map_or_else(|| "n/a".to_string(), |v| v.to_string());
            let _ = writeln!(
                out,
                "  {:<16} {:>8} {:>9} {:>7} {:>11} {:>11} {:>11} {:>11}  {:?}{}",
                r.label,
                r.held,
                int(r.acquired),
                int(r.lost),
                opt(r.renewals_per_s, 0),
                opt(r.expected_renewals_per_s, 0),
                opt(r.client_cpu_us_per_renewal, 1),
                opt(r.server_cpu_us_per_renewal, 1),
                r.failures,
                r.note
                    .as_deref()
                    .map_or_else(String::new, |n| format!("  {n}"))
            );
        }
    }
    if !vs_b.is_empty() {
        let _ = writeln!(out, "\noverload ÷ (b) cycles/s, same run:");
        for (label, ratio) in vs_b {
            let _ = writeln!(out, "  {label:<16} {ratio:.2}x");
        }
    }
    out
}

/// `redlock/rslock` goodput per burst size, when both ran.
fn same_run_ratios<'a>(
    out: &mut String,
    rows: impl Iterator<Item = (&'a str, usize, f64)> + Clone,
) {
    for (label, size, goodput) in rows.clone().filter(|r| r.0 == "redlock") {
        if let Some((_, _, peer)) = rows.clone().find(|r| r.0 == "rslock" && r.1 == size) {
            let _ = writeln!(
                out,
                "  {label}/rslock goodput, burst {size}: {:.2}x",
                goodput / peer.max(1e-9)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_to_b_by_label() {
        let runs = vec![
            ("b", "redlock".to_string(), 1000.0),
            ("b", "rslock".to_string(), 500.0),
            ("overload", "redlock".to_string(), 250.0),
            ("overload", "rslock".to_string(), 500.0),
            ("overload", "raw".to_string(), 1.0),
        ];
        let r = overload_vs_b(&runs);
        assert_eq!(r.len(), 2);
        assert!((r["redlock"] - 0.25).abs() < 1e-9 && (r["rslock"] - 1.0).abs() < 1e-9);
        assert!(render(&Records::default(), &r).contains("overload ÷ (b)"));
        assert!(render(&Records::default(), &BTreeMap::new()).is_empty());
    }
}
