//! `--processes`: a short real run split over 2 loadgen processes on spawned nodes (merged JSON, no
//! leftover process), and SIGTERM mid-run stopping every worker process and node.

use std::time::{Duration, Instant};

use crate::common::{
    ended_by_dead_node, loadgen, per_process_cycles, read_json, run_ok, spawned_and_stopped,
    spawned_ports, stderr, wait_within,
};

/// Pids of live loadgen worker processes whose command line names `needle` (a node URL of this test).
fn workers_naming(needle: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd);
            cmd.contains("--worker-process") && cmd.contains(needle) && alive(*pid)
        })
        .collect()
}

/// Whether `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next())
        })
        .is_some_and(|state| state != 'Z' && state != 'X')
}

/// Checks that the run whose stderr is `err` started `count` nodes, and that neither a worker
/// process nor a node is left running.
fn none_left(err: &str, count: usize) {
    let until = Instant::now() + Duration::from_secs(3);
    for port in spawned_ports(err) {
        let url = format!("127.0.0.1:{port}");
        loop {
            let left = workers_naming(&url);
            if left.is_empty() {
                break;
            }
            assert!(
                Instant::now() < until,
                "worker processes {left:?} were left running"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    spawned_and_stopped(err, count);
}

#[test]
fn two_processes_merge_into_one_record() {
    let dir = std::env::temp_dir().join(format!("loadgen-procs-{}", std::process::id()));
    let json = dir.join("run.json");
    let mut cmd = loadgen();
    // Spawned nodes, two worker processes, both waiting modes, quick retries.
    let line = "--spawn 3 --concurrency 8 --keys 2 --duration 700ms --warmup 200ms --processes 2 \
        --engine redlock,rslock --waiting plain,smart --ttl 2s --retry-delay 2ms --retry-jitter 2ms";
    cmd.args(line.split_whitespace()).arg("--json").arg(&json);
    let (table, err) = run_ok(cmd, Duration::from_secs(60));
    none_left(&err, 3);

    assert!(
        table.contains("in 2 processes") && table.contains("redlock/redlock[plain]"),
        "{table}"
    );
    let doc = read_json(&json);
    assert_eq!(doc["config"]["processes"], 2);
    assert_eq!(
        doc["config"]["waiting"],
        serde_json::json!(["plain", "smart"])
    );
    let runs = doc["runs"].as_array().unwrap();
    let labels: Vec<&str> = runs.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["redlock[plain]", "redlock", "rslock"]);
    for run in runs {
        assert_eq!(run["processes"], 2, "{run}");
        assert_eq!(run["concurrency"], 8);
        assert_eq!(run["keys"], 2);
        assert!(run["cycles"].as_u64().unwrap() > 0, "no cycles: {run}");
        let elapsed = run["elapsed_s"].as_f64().unwrap();
        assert!((0.6..5.0).contains(&elapsed), "elapsed {elapsed}: {run}");
        for key in ["p50", "p99", "max"] {
            assert!(run["acquire_us"][key].as_f64().unwrap() > 0.0, "{run}");
            assert!(run["release_us"][key].as_f64().unwrap() > 0.0, "{run}");
        }
        // Overtakes are counted over both processes' grants (one shared monotonic clock).
        assert!(run["max_overtakes"].as_u64().is_some(), "{run}");
        assert!(run["overtakes_per_grant"].as_f64().unwrap() >= 0.0, "{run}");
        if run["label"] == "redlock[plain]" {
            // Random backoff with 4 contenders per key: someone who came later wins now and then.
            assert!(run["max_overtakes"].as_u64().unwrap() >= 1, "{run}");
        }
        // Every worker of both processes counts: 8 workers, so the index is at least 1/8.
        let fairness = run["fairness"].as_f64().unwrap();
        assert!((0.125..=1.0).contains(&fairness), "{run}");
        let per_process = per_process_cycles(run);
        assert_eq!(per_process.len(), 2, "{run}");
        assert_eq!(
            per_process.iter().sum::<u64>(),
            run["cycles"].as_u64().unwrap()
        );
        let pf = run["process_fairness"].as_f64().unwrap();
        assert!((0.5..=1.0).contains(&pf), "{run}");
        // redlock reports attempts through Lock::attempts now (0 for a local hand-off).
        assert!(
            run["attempts_per_acquire"].as_f64().unwrap() >= 0.0,
            "{run}"
        );
    }
    assert_eq!(runs[0]["waiting"], "plain");
    assert_eq!(runs[1]["waiting"], "smart");
    assert!(runs[2]["waiting"].is_null());
    // Plain backoff has no local hand-off: every acquire made at least one attempt on the nodes.
    assert!(runs[0]["attempts_per_acquire"].as_f64().unwrap() >= 1.0);
    let ratio = &doc["ratios"]["custom"]["redlock/redlock[plain]"];
    for key in ["cycles_per_s", "acquire_p50", "acquire_p99", "fairness"] {
        assert!(ratio[key].as_f64().unwrap() > 0.0, "{key}: {ratio}");
    }
    assert!(doc["ratios"]["custom"]["redlock/rslock"]["cycles_per_s"].is_number());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_stops_every_worker_process_and_node() {
    let mut cmd = loadgen();
    cmd.args(["--spawn", "3", "--concurrency", "4", "--keys", "2"])
        .args(["--duration", "30s", "--warmup", "0", "--processes", "2"])
        .args(["--engine", "redlock"]);
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    // Wait for both worker processes to be up (their command lines name the parent's nodes).
    let until = Instant::now() + Duration::from_secs(15);
    let workers = loop {
        let kids =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        let workers: Vec<u32> = kids
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains("--worker-process"))
            })
            .collect();
        if workers.len() == 2 {
            break workers;
        }
        assert!(Instant::now() < until, "worker processes did not start");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(1000));
    // SAFETY: kill(2) on the pid of the child this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
    let out = wait_within(child, Duration::from_secs(15));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("terminated (SIGTERM)"), "{err}");
    none_left(&err, 3);
    let until = Instant::now() + Duration::from_secs(3);
    while workers.iter().any(|&w| alive(w)) {
        assert!(
            Instant::now() < until,
            "worker processes {workers:?} outlived loadgen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn node_dying_mid_run_ends_a_multi_process_run() {
    let mut nodes: Vec<crate::common::RedisNode> =
        (0..3).map(|_| crate::common::RedisNode::start()).collect();
    let urls: Vec<String> = nodes.iter().map(crate::common::RedisNode::url).collect();
    let mut cmd = loadgen();
    cmd.args(["--nodes", &urls.join(","), "--engine", "redlock"])
        .args(["--concurrency", "4", "--keys", "2", "--processes", "2"])
        .args(["--duration", "30s", "--warmup", "0", "--quiet"]);
    let child = cmd.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    nodes[1].kill9();
    ended_by_dead_node(child, &urls[1]);
    let until = Instant::now() + Duration::from_secs(3);
    while !workers_naming(&urls[0]).is_empty() {
        assert!(Instant::now() < until, "worker processes outlived loadgen");
        std::thread::sleep(Duration::from_millis(50));
    }
}
