//! Bad input: one clear line on stderr, a non-zero exit, never a hang.

use std::time::Duration;

use crate::common::{free_port, loadgen, run_within, stderr};

fn expect_one_line_error(args: &[&str], needle: &str) {
    let mut cmd = loadgen();
    cmd.args(args);
    let out = run_within(cmd, Duration::from_secs(20));
    let err = stderr(&out);
    assert!(!out.status.success(), "{args:?} should fail, stderr: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: expected one line, got: {err}"
    );
    assert!(err.starts_with("loadgen: error: "), "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "{args:?}: expected `{needle}` in: {err}"
    );
}

#[test]
fn zero_concurrency() {
    expect_one_line_error(&["--concurrency", "0"], "--concurrency must be at least 1");
}

#[test]
fn zero_duration() {
    expect_one_line_error(&["--duration", "0"], "--duration must be above zero");
}

#[test]
fn contention_refuses_the_options_it_sets() {
    expect_one_line_error(
        &["--scenario", "contention", "--lock", "fair"],
        "--scenario contention runs the exclusive and the fair lock in every layout: drop --lock",
    );
    expect_one_line_error(
        &["--scenario", "contention", "--processes", "4"],
        "drop --processes",
    );
}

#[test]
fn unknown_engine() {
    expect_one_line_error(
        &["--engine", "redlock,zookeeper"],
        "invalid value 'zookeeper'",
    );
}

#[test]
fn unreachable_nodes() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    expect_one_line_error(&["--nodes", &url, "--duration", "1s"], "cannot reach node");
}

#[test]
fn malformed_node_url() {
    expect_one_line_error(&["--nodes", "http://127.0.0.1:1"], "bad node URL");
}

#[test]
fn missing_redis_server() {
    let empty = std::env::temp_dir().join(format!("loadgen-empty-path-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let mut cmd = loadgen();
    cmd.env("PATH", &empty).args(["--duration", "1s"]);
    let out = run_within(cmd, Duration::from_secs(20));
    let _ = std::fs::remove_dir(&empty);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("apt-get install -y redis-server"), "{err}");
    assert_eq!(out.status.code(), Some(2), "{err}");
}

#[test]
fn a_server_that_cannot_be_had_exits_2() {
    for (server, needle) in [
        (
            "/no/such/redis-server",
            "--server /no/such/redis-server: no such file",
        ),
        ("/bin/true", "is not a redis-server"),
    ] {
        let mut cmd = loadgen();
        cmd.args(["--server", server, "--duration", "1s"]);
        let out = run_within(cmd, Duration::from_secs(20));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{server}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{server}: {err}");
    }
    expect_one_line_error(&["--server", "valky"], "not redis7, redis6 or valkey");
}

#[test]
fn overload_scenarios_reject_bad_sizes_and_custom_runs() {
    for (args, needle) in [
        (
            &["--scenario", "burst", "--burst", "0"][..],
            "--burst 0: must be between 1 and 1m",
        ),
        (
            &["--scenario", "held", "--renew-every", "3s"][..],
            "must be above zero and below --held-ttl",
        ),
        (
            &["--scenario", "overload", "--concurrency", "8"][..],
            "--concurrency/--keys define a custom run",
        ),
        (
            &["--scenario", "burst", "--processes", "2"][..],
            "--processes applies to the standard and custom scenarios",
        ),
    ] {
        expect_one_line_error(args, needle);
    }
}
