//! `--scenario election` for real, briefly: 3 failover trials with 2 observers and a 500 ms TTL,
//! then the holding cost of 50 elections beside 50 renewed locks and idle nodes; the table's lines
//! and the JSON document's sections, and no process of the run left behind.

use std::time::Duration;

use crate::common::{loadgen, read_json, run_ok, spawned_and_stopped};

/// Whether a process with this command line fragment still runs (the candidates and observers are
/// loadgen re-executed with `--election-name NAME`, NAME unique to the run).
fn running(fragment: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.filter_map(Result::ok).any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(fragment)
            })
            .unwrap_or(false)
    })
}

#[test]
fn election_scenario_measures_failover_observers_and_holding_cost() {
    let json = std::env::temp_dir().join(format!("loadgen-election-{}.json", std::process::id()));
    let mut cmd = loadgen();
    cmd.args(["--scenario", "election", "--spawn", "3"])
        .args([
            "--trials",
            "3",
            "--election-ttl",
            "500ms",
            "--observers",
            "2",
        ])
        .args(["--elections", "50", "--cost-for", "1s"])
        .arg("--json")
        .arg(&json);
    let (table, err) = run_ok(cmd, Duration::from_secs(60));
    spawned_and_stopped(&err, 3);

    for line in [
        "failover ",
        "observer delay ",
        "node RTT (PING)",
        "vs goal TTL + 2 RTT = ",
        "observer delay p99 ",
        "holding cost:",
        "  idle ",
        "  renewed locks ",
        "  elections ",
        "elections vs renewed locks",
    ] {
        assert!(table.contains(line), "no `{line}` in:\n{table}");
    }
    assert_eq!(err.matches("loadgen: election trial ").count(), 3, "{err}");

    let doc = read_json(&json);
    let _ = std::fs::remove_file(&json);
    for key in [
        "machine", "versions", "servers", "config", "rtt_us", "failover", "goals", "holding",
        "notes",
    ] {
        assert!(doc.get(key).is_some(), "missing {key}: {doc}");
    }
    let trials = doc["failover"]["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 3);
    let mut last = 0;
    for t in trials {
        // A killed leader's key lives out its TTL from its last renewal: at least 2/3 of 500 ms.
        let us = t["failover_us"].as_u64().unwrap();
        assert!((300_000..10_000_000).contains(&us), "{t}");
        let term = t["term"].as_u64().unwrap();
        assert!(
            term > t["killed_term"].as_u64().unwrap() && term > last,
            "{t}"
        );
        last = term;
        assert_eq!(t["observer_delay_us"].as_array().unwrap().len(), 2, "{t}");
    }
    assert_eq!(doc["failover"]["observer_missed"], 0, "{doc}");
    let holding = &doc["holding"];
    for phase in ["idle", "locks", "elections"] {
        assert!(
            holding[phase]["server_cpu_ms_per_s"].as_f64().unwrap() >= 0.0,
            "{holding}"
        );
    }
    for phase in ["locks", "elections"] {
        assert_eq!(holding[phase]["acquired"], 50, "{holding}");
        assert_eq!(holding[phase]["lost"], 0, "{holding}");
    }
    let name = doc["config"]["command"].as_str().unwrap().to_string();
    assert!(name.contains("--scenario election"), "{name}");
    // Every candidate and observer is gone (the nodes were checked above).
    assert!(
        !running("--election-child"),
        "an election process was left running"
    );
}
