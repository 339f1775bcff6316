//! The contention rows' ratios, goals, JSON part and table, on made-up rows (the module is
//! `report::contention`; its tests sit apart to keep it short).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::*;
use crate::overload::cpu::CpuUse;
use crate::overtakes::Overtakes;
use crate::report::json::contention_out;
use crate::workload::{Scenario, CONTENTION_LAYOUTS};

/// A row of `engine` in layout `i` of the scenario: `rate` cycles/s over 1 s, every acquire taking
/// `acquire_us`, `server_s` of server CPU, `max` overtakes at most.
fn row(
    i: usize,
    lock: LockKind,
    engine: EngineKind,
    rate: u64,
    acquire_us: u64,
    server_s: f64,
    max: u64,
) -> ContentionRow {
    let layout = CONTENTION_LAYOUTS[i];
    let mut acquire = crate::stats::histogram();
    acquire.record_n(acquire_us, 1000).unwrap();
    let per_process = if layout.processes > 1 {
        vec![rate / layout.processes as u64; layout.processes]
    } else {
        Vec::new()
    };
    ContentionRow {
        lock,
        record: RunRecord {
            engine,
            scenario: Scenario::contention(layout, lock),
            nodes: 5,
            cycles: rate,
            elapsed: Duration::from_secs(1),
            cycles_per_s: rate as f64,
            release: Some(acquire.clone()),
            acquire: Some(acquire),
            attempts_per_acquire: Some(1.0),
            failed_acquires: BTreeMap::new(),
            failed_releases: BTreeMap::new(),
            fairness: Some(0.95),
            ceiling: None,
            waiting: engine.has_waiting().then_some(Waiting::Smart),
            processes: Some(layout.processes),
            per_process,
            overtakes: Some(Overtakes {
                max,
                per_grant: 0.5,
                grants: rate,
            }),
            cpu: Some(CpuUse {
                client: Duration::from_millis(100),
                server_s: Some(server_s),
                server_calls: None,
            }),
        },
    }
}

/// Every layout: redlock exclusive, rslock, redlock fair. In 4x16 redlock meets every goal (half the
/// one-process rate, p99.9 9 ms; the fair lock at half the rate for 4x the server CPU per cycle);
/// in 16x4 it misses every one.
fn rows() -> Vec<ContentionRow> {
    use EngineKind::{Redlock, Rslock};
    use LockKind::{Exclusive, Fair};
    vec![
        row(0, Exclusive, Redlock, 60_000, 3_000, 3.0, 10),
        row(0, Exclusive, Rslock, 4_000, 50_000, 1.0, 40),
        row(0, Fair, Redlock, 20_000, 5_000, 2.0, 2),
        row(1, Exclusive, Redlock, 30_000, 9_000, 1.5, 60),
        row(1, Exclusive, Rslock, 3_000, 300_000, 1.0, 80),
        // 15k cycles in 1 s with 3 s of server CPU: 200 µs/cycle, 4x the exclusive lock's 50.
        row(1, Fair, Redlock, 15_000, 12_000, 3.0, 3),
        row(2, Exclusive, Redlock, 10_000, 25_000, 1.0, 66),
        row(2, Exclusive, Rslock, 2_000, 400_000, 1.0, 90),
        row(2, Fair, Redlock, 4_000, 60_000, 2.0, 4),
    ]
}

#[test]
fn rate_against_the_same_engines_one_process_exclusive_lock() {
    let rows = rows();
    let vs: Vec<Option<f64>> = rows.iter().map(|r| vs_one_process(&rows, r)).collect();
    let want = [
        1.0,
        1.0,
        1.0 / 3.0,
        0.5,
        0.75,
        0.25,
        1.0 / 6.0,
        0.5,
        1.0 / 15.0,
    ];
    for (got, want) in vs.iter().zip(want) {
        assert!((got.unwrap() - want).abs() < 1e-9, "{vs:?}");
    }
    // Without the reference row there is nothing to divide by.
    assert_eq!(vs_one_process(&rows[3..], &rows[3]), None);
}

#[test]
fn same_run_ratios_per_layout() {
    let all = compare(&rows());
    let names: Vec<(&str, &str)> = all.iter().map(|c| (c.layout, c.name.as_str())).collect();
    assert_eq!(
        names,
        [
            ("1x64", "redlock/rslock"),
            ("1x64", "redlock fair/exclusive"),
            ("4x16", "redlock/rslock"),
            ("4x16", "redlock fair/exclusive"),
            ("16x4", "redlock/rslock"),
            ("16x4", "redlock fair/exclusive"),
        ]
    );
    let fair = &all[3];
    assert!((fair.cycles_per_s.unwrap() - 0.5).abs() < 1e-9);
    assert!((fair.server_cpu_us_per_cycle.unwrap() - 4.0).abs() < 1e-9);
    assert!((fair.max_overtakes.unwrap() - 0.05).abs() < 1e-9);
    let vs_rslock = &all[2];
    assert!((vs_rslock.cycles_per_s.unwrap() - 10.0).abs() < 1e-9);
    assert!((vs_rslock.acquire_p999.unwrap() - 0.03).abs() < 1e-3);
}

#[test]
fn the_contention_goals_met_and_missed() {
    let verdicts: Vec<(&str, &str, Option<bool>)> = goals(&rows())
        .iter()
        .map(|g| (g.scenario, g.what, g.met()))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("4x16", "exclusive p99.9 ms", Some(true)),
            ("4x16", "exclusive cycles/s vs 1p", Some(true)),
            ("16x4", "exclusive p99.9 ms", Some(false)),
            ("4x16", "fair/exclusive cycles/s", Some(true)),
            ("4x16", "fair/exclusive server µs/cycle", Some(true)),
            ("16x4", "fair/exclusive cycles/s", Some(false)),
            ("16x4", "fair/exclusive server µs/cycle", Some(false)),
        ]
    );
    // Without the fair rows those goals are not measured; without redlock there are none.
    let exclusive: Vec<ContentionRow> = rows()
        .into_iter()
        .filter(|r| r.lock == LockKind::Exclusive)
        .collect();
    assert!(goals(&exclusive)[3..].iter().all(|g| g.met().is_none()));
    let rslock: Vec<ContentionRow> = rows()
        .into_iter()
        .filter(|r| r.record.engine == EngineKind::Rslock)
        .collect();
    assert!(goals(&rslock).is_empty());
}

#[test]
fn json_part_has_every_row_and_field() {
    let rows = rows();
    let doc: Value = serde_json::to_value(contention_out(&rows, 0).unwrap()).unwrap();
    assert!(contention_out(&[], 0).is_none());
    let out = doc["rows"].as_array().unwrap();
    assert_eq!(out.len(), 9);
    for (r, o) in rows.iter().zip(out) {
        assert_eq!(o["layout"], r.layout());
        assert_eq!(o["scenario"], r.layout(), "{o}");
        assert_eq!(o["lock"], r.lock.to_string());
        assert_eq!(o["engine"], r.record.engine.name());
        assert_eq!(o["processes"], r.processes());
        assert_eq!(o["workers_per_process"], 64 / r.processes());
        for key in [
            "cycles_per_s",
            "vs_one_process",
            "fairness",
            "max_overtakes",
            "overtakes_per_grant",
            "server_cpu_us_per_cycle",
            "client_cpu_us_per_cycle",
        ] {
            assert!(o[key].is_number(), "{key}: {o}");
        }
        for key in ["p50", "p99", "p999"] {
            assert!(o["acquire_us"][key].is_number(), "{key}: {o}");
        }
        assert_eq!(o["process_fairness"].is_number(), r.processes() > 1, "{o}");
    }
    assert_eq!(doc["ratios"].as_array().unwrap().len(), 6);
    let goals = doc["goals"].as_array().unwrap();
    assert_eq!(goals.len(), 7);
    assert_eq!(goals[0]["target"], "<= 10");
    assert_eq!(goals[2]["met"], false);
}

#[test]
fn table_shows_every_row_ratio_and_goal() {
    let text = render(&rows());
    assert!(
        text.contains("contention across processes: 64 workers on 4 keys"),
        "{text}"
    );
    for layout in ["1x64", "4x16", "16x4"] {
        for (lock, engine) in [
            ("exclusive", "redlock"),
            ("exclusive", "rslock"),
            ("fair", "redlock"),
        ] {
            let found = text.lines().any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 3 && cols[..3] == [layout, lock, engine]
            });
            assert!(found, "no {layout} {lock} {engine} row: {text}");
        }
    }
    assert!(text.contains("4x16   redlock fair/exclusive"), "{text}");
    assert!(text.contains("(16x4) exclusive p99.9 ms"), "{text}");
    assert_eq!(text.matches(" missed").count(), 3, "{text}");
    // The one-process reference is 1.00x of itself; a cross-process row has a process fairness.
    assert!(text.contains("1.00x") && text.contains("0.50x"), "{text}");
    assert!(render(&[]).is_empty());
}
