//! `--scenario contention` for real, with short rows: every layout x lock x engine row in
//! the table and in the JSON document, each with cycles and sane figures; the nodes stopped after.

use std::time::Duration;

use crate::common::{loadgen, per_process_cycles, read_json, run_ok, spawned_and_stopped};
use serde_json::Value;

/// The rows the scenario runs with its default engines, in run order: (layout, processes, lock, engine).
const ROWS: [(&str, u64, &str, &str); 9] = [
    ("1x64", 1, "exclusive", "redlock"),
    ("1x64", 1, "exclusive", "rslock"),
    ("1x64", 1, "fair", "redlock"),
    ("4x16", 4, "exclusive", "redlock"),
    ("4x16", 4, "exclusive", "rslock"),
    ("4x16", 4, "fair", "redlock"),
    ("16x4", 16, "exclusive", "redlock"),
    ("16x4", 16, "exclusive", "rslock"),
    ("16x4", 16, "fair", "redlock"),
];

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number: {v}"))
}

#[test]
fn every_row_of_the_contention_scenario_measures_something() {
    let dir = std::env::temp_dir().join(format!("loadgen-contention-{}", std::process::id()));
    let json = dir.join("run.json");
    let mut cmd = loadgen();
    cmd.args(["--scenario", "contention", "--spawn", "3"])
        .args(["--duration", "300ms", "--warmup", "100ms", "--ttl", "2s"])
        .arg("--json")
        .arg(&json);
    let (table, err) = run_ok(cmd, Duration::from_secs(240));
    spawned_and_stopped(&err, 3);

    // The table: one line per row, its first three columns layout, lock, engine; no ceiling.
    assert!(table.contains("contention across processes"), "{table}");
    assert!(!table.contains("ceiling"), "{table}");
    for (layout, _, lock, engine) in ROWS {
        let found = table.lines().any(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.len() > 10 && cols[..3] == [layout, lock, engine] && cols[3] != "0"
        });
        assert!(
            found,
            "no {layout} {lock} {engine} row with cycles: {table}"
        );
    }
    assert!(table.contains("16x4   redlock fair/exclusive"), "{table}");
    assert!(table.contains("contention regression targets"), "{table}");

    let doc = read_json(&json);
    assert_eq!(
        doc["runs"].as_array().unwrap().len(),
        0,
        "its rows are not ordinary runs"
    );
    let rows = doc["contention"]["rows"].as_array().unwrap();
    let shape: Vec<(&str, u64, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["layout"].as_str().unwrap(),
                r["processes"].as_u64().unwrap(),
                r["lock"].as_str().unwrap(),
                r["engine"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(shape, ROWS);
    for r in rows {
        let processes = r["processes"].as_u64().unwrap();
        assert_eq!(
            (r["concurrency"].as_u64(), r["keys"].as_u64()),
            (Some(64), Some(4)),
            "{r}"
        );
        assert_eq!(
            r["workers_per_process"].as_u64(),
            Some(64 / processes),
            "{r}"
        );
        let cycles = r["cycles"].as_u64().unwrap();
        assert!(cycles > 0, "no cycles: {r}");
        let elapsed = num(r, "elapsed_s");
        assert!((0.25..10.0).contains(&elapsed), "elapsed {elapsed}: {r}");
        assert!(
            (num(r, "cycles_per_s") - cycles as f64 / elapsed).abs() < 1.0,
            "{r}"
        );
        let a = &r["acquire_us"];
        let (p50, p99, p999) = (num(a, "p50"), num(a, "p99"), num(a, "p999"));
        assert!(
            0.0 < p50 && p50 <= p99 && p99 <= p999 && p999 <= num(a, "max"),
            "{r}"
        );
        // Jain's index over 64 workers lies in [1/64, 1]; over P processes in [1/P, 1].
        let fairness = num(r, "fairness");
        assert!((1.0 / 64.0..=1.0).contains(&fairness), "{r}");
        if processes > 1 {
            let per = per_process_cycles(r);
            assert_eq!(per.len() as u64, processes, "{r}");
            assert_eq!(per.iter().sum::<u64>(), cycles, "{r}");
            let pf = num(r, "process_fairness");
            assert!((1.0 / processes as f64..=1.0).contains(&pf), "{r}");
        } else {
            assert!(r["process_fairness"].is_null(), "{r}");
        }
        let (max, mean) = (num(r, "max_overtakes"), num(r, "overtakes_per_grant"));
        assert!(0.0 <= mean && mean <= max, "{r}");
        // The servers did the work of every cycle, and so did the client processes.
        assert!(num(r, "server_cpu_us_per_cycle") > 0.0, "{r}");
        assert!(num(r, "client_cpu_us_per_cycle") > 0.0, "{r}");
        let vs = num(r, "vs_one_process");
        if processes == 1 && r["lock"] == "exclusive" {
            assert_eq!(vs, 1.0, "the reference: {r}");
        } else {
            assert!(vs > 0.0, "{r}");
        }
    }
    let ratios = doc["contention"]["ratios"].as_array().unwrap();
    assert_eq!(
        ratios.len(),
        6,
        "redlock/rslock and fair/exclusive per layout"
    );
    for c in ratios {
        assert!(num(c, "cycles_per_s") > 0.0, "{c}");
    }
    let goals = doc["contention"]["goals"].as_array().unwrap();
    assert_eq!(goals.len(), 7);
    for g in goals {
        assert!(g["measured"].is_number() && g["met"].is_boolean(), "{g}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
