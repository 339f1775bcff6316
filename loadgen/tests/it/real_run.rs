//! A short real run against spawned nodes: the JSON document's contract keys, the --out files, and no
//! redis-server left behind.

use std::time::Duration;

use crate::common::{loadgen, read_json, run_ok, spawned_and_stopped};

#[test]
fn short_run_writes_the_contract_and_stops_its_nodes() {
    let dir = std::env::temp_dir().join(format!("loadgen-test-{}", std::process::id()));
    let json = dir.join("run.json");
    let mut cmd = loadgen();
    cmd.args([
        "--spawn",
        "3",
        "--concurrency",
        "4",
        "--keys",
        "1k",
        "--duration",
        "300ms",
        "--warmup",
        "100ms",
    ])
    .args([
        "--engine",
        "redlock,rslock,raw",
        "--ttl",
        "2s",
        "--retry-delay",
        "2ms",
        "--retry-jitter",
        "2ms",
    ])
    .arg("--json")
    .arg(&json)
    .arg("--out")
    .arg(&dir);
    let (table, err) = run_ok(cmd, Duration::from_secs(40));
    spawned_and_stopped(&err, 3);

    assert!(
        table.contains("redlock/rslock") && table.contains("redlock/raw"),
        "{table}"
    );

    let doc = read_json(&json);
    assert!(doc["machine"]["cores"].as_u64().unwrap() >= 1);
    assert!(doc["versions"]["redis"]
        .as_str()
        .unwrap()
        .starts_with(|c: char| c.is_ascii_digit()));
    assert_eq!(doc["config"]["nodes"], 3);
    // Each node's server from its INFO (the PATH's: Redis 7.0 in the default suite).
    let servers = doc["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 3, "{servers:?}");
    for s in servers {
        assert!(s["node"]
            .as_str()
            .unwrap()
            .starts_with("redis://127.0.0.1:"));
        assert!(
            ["redis", "valkey"].contains(&s["server_name"].as_str().unwrap()),
            "{s}"
        );
        assert!(s["server_version"]
            .as_str()
            .unwrap()
            .starts_with(|c: char| c.is_ascii_digit()));
    }
    let runs = doc["runs"].as_array().unwrap();
    let engines: Vec<&str> = runs.iter().map(|r| r["engine"].as_str().unwrap()).collect();
    assert_eq!(engines, ["redlock", "rslock", "raw"]);
    for run in runs {
        assert_eq!(run["nodes"], 3);
        assert_eq!(run["concurrency"], 4);
        assert_eq!(run["keys"], 1000);
        assert_eq!(run["hold_us"], 0);
        assert!(run["cycles"].as_u64().unwrap() > 0, "no cycles: {run}");
        assert!(run["cycles_per_s"].as_f64().unwrap() > 0.0);
        for key in ["p50", "p90", "p99", "p999", "max"] {
            assert!(
                run["acquire_us"][key].as_f64().unwrap() > 0.0,
                "acquire_us.{key}: {run}"
            );
            assert!(
                run["release_us"][key].as_f64().unwrap() > 0.0,
                "release_us.{key}: {run}"
            );
        }
        // redlock reports attempts through Lock::attempts: 0 for a local hand-off, so its mean may dip
        // below 1 when two workers meet on a key.
        let attempts = run["attempts_per_acquire"].as_f64().unwrap();
        if run["engine"] == "redlock" {
            assert!(attempts > 0.5, "{run}");
        } else {
            assert!(attempts >= 1.0, "{run}");
        }
        assert!(run["failed_acquires"].is_object());
        let fairness = run["fairness"].as_f64().unwrap();
        assert!(fairness > 0.0 && fairness <= 1.0);
    }
    assert!(
        doc["ratios"]["custom"]["redlock/rslock"]["cycles_per_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(
        doc["ratios"]["custom"]["redlock/raw"]["acquire_p99"]
            .as_f64()
            .unwrap()
            > 0.0
    );

    let svg = std::fs::read_to_string(dir.join("latency.svg")).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 3);
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("| redlock |") && md.contains("latency.svg"));
    let _ = std::fs::remove_dir_all(&dir);
}
