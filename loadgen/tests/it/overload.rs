//! The overload scenarios at a tiny size against spawned nodes: each writes its JSON section with
//! sane figures, keeps the old contract keys, and leaves no redis-server behind.

use std::time::Duration;

use crate::common::{loadgen, read_json, run_ok, spawned_and_stopped};
use serde_json::Value;

/// Runs loadgen with `args` on 3 spawned nodes; the JSON document and the table.
fn run(name: &str, args: &[&str]) -> (Value, String) {
    let json = std::env::temp_dir().join(format!("loadgen-{name}-{}.json", std::process::id()));
    let mut cmd = loadgen();
    cmd.args(["--spawn", "3", "--duration", "500ms", "--warmup", "100ms"])
        .args(args)
        .arg("--json")
        .arg(&json);
    let (table, err) = run_ok(cmd, Duration::from_secs(90));
    spawned_and_stopped(&err, 3);
    let doc = read_json(&json);
    let _ = std::fs::remove_file(&json);
    for key in ["machine", "versions", "config", "runs", "ratios"] {
        assert!(doc.get(key).is_some(), "missing {key}");
    }
    (doc, table)
}

#[test]
fn burst_of_200_drains_with_every_lock_won() {
    let (doc, table) = run(
        "burst",
        &[
            "--scenario",
            "burst",
            "--burst",
            "200",
            "--acquire-timeout",
            "20s",
        ],
    );
    let bursts = doc["burst"].as_array().expect("a burst section");
    let engines: Vec<&str> = bursts
        .iter()
        .map(|b| b["engine"].as_str().unwrap())
        .collect();
    assert_eq!(engines, ["redlock", "rslock"]);
    for b in bursts {
        assert_eq!(b["burst"], 200, "{b}");
        let ok = b["successes"].as_u64().unwrap();
        assert!(
            ok <= 200 && b["success_rate"].as_f64().unwrap() <= 1.0,
            "{b}"
        );
        // 200 uncontended acquires on an idle machine: all win.
        assert_eq!(ok, 200, "{b}");
        assert!(b["drain_s"].as_f64().unwrap() > 0.0, "{b}");
        assert!(b["goodput_per_s"].as_f64().unwrap() > 0.0, "{b}");
        assert!(b["goodput_vs_b"].as_f64().unwrap() > 0.0, "{b}");
        assert!(
            b["failures"].is_object() && b["failed_releases"] == 0,
            "{b}"
        );
        assert_eq!(b["acquire_timeout_s"], 20.0, "{b}");
        assert!(b["loadavg"].is_array(), "{b}");
    }
    // (b) ran in the same invocation, for the ratio.
    assert!(doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["scenario"] == "b"));
    assert!(
        table.contains("burst:") && table.contains("redlock/rslock goodput"),
        "{table}"
    );
}

#[test]
fn held_100_for_3s_renews_and_measures_cpu_on_both_engines() {
    let (doc, table) = run(
        "held",
        &["--scenario", "held", "--held", "100", "--hold-for", "3s"],
    );
    let held = doc["held"].as_array().expect("a held section");
    let redlock = held.iter().find(|h| h["engine"] == "redlock").unwrap();
    assert_eq!(redlock["supported"], true);
    assert_eq!(redlock["acquired"], 100, "{redlock}");
    assert_eq!(redlock["lost"], 0, "{redlock}");
    assert!(
        redlock["lost_timeline"].as_array().unwrap().len() >= 2,
        "{redlock}"
    );
    // TTL 3s renewed every second: about 100 renewals a second over a 3s hold.
    let per_s = redlock["renewals_per_s"].as_f64().unwrap();
    assert!((30.0..=150.0).contains(&per_s), "{redlock}");
    for key in ["client_cpu_us_per_renewal", "server_cpu_us_per_renewal"] {
        let v = redlock[key].as_f64().unwrap();
        assert!(v > 0.0 && v < 100_000.0, "{key}: {redlock}");
    }
    // Renewals are script calls, except on servers with native commands (Valkey 9: SET ... IFEQ).
    let native = doc["servers"]
        .as_array()
        .is_some_and(|s| s.iter().all(|n| n["server_name"] == "valkey"));
    if !native {
        assert!(redlock["evalsha_calls"].as_u64().unwrap() > 0, "{redlock}");
    }
    assert_eq!(redlock["failed_releases"], 0, "{redlock}");
    // rslock has no watchdog: loadgen's own extend loop per lock, measured the same way.
    let rslock = held.iter().find(|h| h["engine"] == "rslock").unwrap();
    assert_eq!(
        (&rslock["supported"], &rslock["acquired"]),
        (&Value::Bool(true), &Value::from(100))
    );
    assert!(rslock["renewals_per_s"].as_f64().unwrap() > 0.0, "{rslock}");
    assert!(
        rslock["note"].as_str().unwrap().contains("no watchdog"),
        "{rslock}"
    );
    assert!(table.contains("held:"), "{table}");
}

#[test]
fn overload_runs_after_b_with_the_ratio() {
    let (doc, table) = run(
        "overload",
        &["--scenario", "overload", "--overload-workers", "300"],
    );
    let runs = doc["runs"].as_array().unwrap();
    for engine in ["redlock", "rslock"] {
        for scenario in ["b", "overload"] {
            let r = runs
                .iter()
                .find(|r| r["engine"] == engine && r["scenario"] == scenario)
                .unwrap_or_else(|| panic!("no {engine} run in {scenario}"));
            assert!(r["cycles_per_s"].as_f64().unwrap() > 0.0, "{r}");
            assert!(r["failed_acquires"].is_object() && r["failed_releases"].is_object());
        }
        assert!(
            doc["overload_vs_b"][engine].as_f64().unwrap() > 0.0,
            "{doc}"
        );
    }
    let o = runs.iter().find(|r| r["scenario"] == "overload").unwrap();
    assert_eq!(
        (o["concurrency"].as_u64(), o["keys"].as_u64()),
        (Some(300), Some(1_000_000))
    );
    assert!(table.contains("overload ÷ (b)"), "{table}");
}
