//! Helpers for loadgen's end-to-end tests: run the binary with a time limit. The redis-servers the tests
//! own (for `--nodes` runs) come from the workspace's test kit (`testkit/`), stopped by pid when dropped.
#![allow(dead_code)]

use std::io::Read;
use std::net::TcpStream;
use std::path::Path;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
pub use testkit::{free_port, RedisNode};

/// The loadgen binary.
pub fn loadgen() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_loadgen"));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `cmd`, failing the test if it takes longer than `limit` (a hang).
pub fn run_within(mut cmd: Command, limit: Duration) -> Output {
    let child = cmd.spawn().expect("loadgen starts");
    wait_within(child, limit)
}

/// Runs `cmd` within `limit` (see [`run_within`]); it must succeed. Returns its stdout (the table)
/// and stderr.
pub fn run_ok(cmd: Command, limit: Duration) -> (String, String) {
    let out = run_within(cmd, limit);
    let err = stderr(&out);
    assert!(out.status.success(), "loadgen failed: {err}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), err)
}

/// The JSON document a run wrote to `path` (`--json`).
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Waits for a run that was told to end by the death of its node `url` (just killed): it ends
/// within 15 s with exit code 1 and one line that names the node.
pub fn ended_by_dead_node(child: Child, url: &str) {
    let out = wait_within(child, Duration::from_secs(15));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(url) && err.contains("mid-run"), "{err}");
}

/// Waits for `child`, killing it and failing the test after `limit`.
pub fn wait_within(mut child: Child, limit: Duration) -> Output {
    let until = Instant::now() + limit;
    // Drain the pipes on threads so a chatty child cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_thread = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_thread = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("loadgen did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_thread.join().unwrap(),
        stderr: err_thread.join().unwrap(),
    }
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The ports from loadgen's "started N redis-server nodes on 127.0.0.1, ports a,b,c" line.
pub fn spawned_ports(stderr: &str) -> Vec<u16> {
    stderr
        .lines()
        .find_map(|l| l.split_once(", ports ").map(|(_, p)| p.trim().to_string()))
        .map(|p| p.split(',').map(|x| x.parse().unwrap()).collect())
        .unwrap_or_default()
}

/// Checks that the run whose stderr is `err` started `count` nodes and that none of them runs any
/// more. Returns their ports.
pub fn spawned_and_stopped(err: &str, count: usize) -> Vec<u16> {
    let ports = spawned_ports(err);
    assert_eq!(ports.len(), count, "{err}");
    for &port in &ports {
        assert!(
            port_closed(port),
            "the node on port {port} was left running"
        );
    }
    ports
}

/// Whether nothing listens on `port` any more (the node was stopped).
pub fn port_closed(port: u16) -> bool {
    // A killed redis-server's socket goes away at once; allow a moment for the reaping.
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        if TcpStream::connect(("127.0.0.1", port)).is_err() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A run's `per_process_cycles` of loadgen's JSON: the successful cycles of each of its processes.
pub fn per_process_cycles(run: &serde_json::Value) -> Vec<u64> {
    run["per_process_cycles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect()
}
