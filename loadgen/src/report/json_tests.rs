//! The `--json` contract test (the module is `report::json`; its tests sit apart to keep it short).

use serde_json::Value;

/// The key names the `--json` contract fixes.
#[test]
fn contract_keys() {
    let doc: Value = serde_json::from_str(&super::render(&crate::report::sample())).unwrap();
    for key in ["machine", "versions", "config", "runs", "ratios"] {
        assert!(doc.get(key).is_some(), "missing {key}");
    }
    assert!(doc["machine"]["cores"].as_u64().unwrap() >= 1);
    assert!(doc["machine"]["os"].is_string());
    assert_eq!(doc["versions"]["redis"], "7.0.15");
    assert!(doc["versions"]["rslock"].is_string() && doc["versions"]["redlock_engine"].is_string());
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12);
    for run in runs {
        let keys =
            "engine nodes concurrency keys hold_us cycles cycles_per_s acquire_us release_us \
                    attempts_per_acquire failed_acquires fairness client_cpu_us_per_cycle \
                    server_cpu_us_per_cycle max_overtakes overtakes_per_grant";
        for key in keys.split_whitespace() {
            assert!(run.get(key).is_some(), "run is missing {key}: {run}");
        }
    }
    let redlock = runs.iter().find(|r| r["engine"] == "redlock").unwrap();
    // The sample's redlock run: 100 ms of client CPU, 0.5 s of server CPU, 1000 cycles.
    assert_eq!(redlock["client_cpu_us_per_cycle"].as_f64(), Some(100.0));
    assert_eq!(redlock["server_cpu_us_per_cycle"].as_f64(), Some(500.0));
    assert_eq!(redlock["max_overtakes"].as_u64(), Some(3));
    assert_eq!(redlock["overtakes_per_grant"].as_f64(), Some(0.25));
    let redlock = &runs[0];
    assert_eq!(redlock["engine"], "redlock");
    assert_eq!(redlock["waiting"], "smart");
    assert_eq!(redlock["processes"], 1);
    assert_eq!(doc["config"]["processes"], 1);
    assert_eq!(doc["config"]["waiting"][0], "smart");
    assert_eq!(redlock["nodes"], 5);
    for key in ["p50", "p90", "p99", "p999", "max"] {
        assert!(redlock["acquire_us"][key].is_number(), "acquire_us.{key}");
        assert!(redlock["release_us"][key].is_number(), "release_us.{key}");
    }
    assert_eq!(redlock["failed_acquires"]["Contended"], 2);
    let ceiling = runs.iter().find(|r| r["engine"] == "ceiling").unwrap();
    assert!(ceiling["acquire_us"].is_null() && ceiling["cycles_per_s"].as_f64().unwrap() > 0.0);
    let b = &doc["ratios"]["b"]["redlock/rslock"];
    assert!((b["cycles_per_s"].as_f64().unwrap() - 3.0).abs() < 1e-9);
    assert!(b["acquire_p50"].is_number() && b["acquire_p99"].is_number());
    assert!(doc["ratios"]["b"]["redlock/ceiling"]["cycles_per_s"].is_number());
    assert_eq!(doc["goals"].as_array().unwrap().len(), 7);
}

/// The fields added with the native commands: each server's name and version, the native ceiling
/// next to the ceiling.
#[test]
fn servers_and_native_ceiling() {
    let doc: Value = serde_json::from_str(&super::render(&crate::report::sample())).unwrap();
    let servers = doc["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 5);
    assert_eq!(servers[0]["node"], "redis://127.0.0.1:7000");
    assert_eq!(servers[0]["server_name"], "redis");
    assert_eq!(servers[0]["server_version"], "7.0.15");
    let runs = doc["runs"].as_array().unwrap();
    let ceiling = runs.iter().find(|r| r["engine"] == "ceiling").unwrap();
    assert_eq!(ceiling["cycles_per_s"].as_f64(), Some(20_000.0));
    assert_eq!(ceiling["native_cycles_per_s"].as_f64(), Some(25_000.0));
    assert_eq!(
        ceiling["ceiling"]["delifeq_ops_per_s"].as_f64(),
        Some(200_000.0)
    );
    let redlock = runs.iter().find(|r| r["engine"] == "redlock").unwrap();
    assert!(redlock.get("native_cycles_per_s").is_none(), "{redlock}");
    // The sample's (b) redlock: 10k cycles/s; the native ceiling 25k.
    let native = &doc["ratios"]["b"]["redlock/ceiling[native]"];
    assert!((native["cycles_per_s"].as_f64().unwrap() - 0.4).abs() < 1e-9);
    assert!(native["acquire_p50"].is_null());
    let ceiling = &doc["ratios"]["b"]["redlock/ceiling"];
    assert!((ceiling["cycles_per_s"].as_f64().unwrap() - 0.5).abs() < 1e-9);
}
