//! The clock shim (`scripts/clockshim`) on a real redis-server: the server starts under it, and
//! stepping the offset moves what Redis derives from its wall clock (TIME, key expiry, PTTL, uptime).
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::RedisNode;
use testkit::clock::{server_time_us, shim, SteppableNode};

const HOUR_MS: i64 = 3_600_000;

fn host_time_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

/// Whether the server process has the shim mapped: without this, a pass-through test proves nothing.
fn has_shim_loaded(node: &RedisNode) -> bool {
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", node.pid().unwrap())).unwrap();
    maps.contains(shim().to_str().unwrap())
}

fn assert_near(what: &str, got: i64, want: i64, tolerance: i64) {
    assert!(
        (got - want).abs() <= tolerance,
        "{what}: got {got}, want {want} ± {tolerance}"
    );
}

fn uptime_s(node: &RedisNode) -> i64 {
    let info = node.cmd(&[b"INFO", b"server"]);
    info.lines()
        .find_map(|l| l.strip_prefix("uptime_in_seconds:"))
        .unwrap_or_else(|| panic!("no uptime_in_seconds in {info:?}"))
        .trim()
        .parse()
        .unwrap()
}

fn pttl(node: &RedisNode, key: &[u8]) -> i64 {
    node.cmd(&[b"PTTL", key]).parse().unwrap()
}

/// Polls `f` every 10 ms until `ok` holds or `within` passes; the last value either way.
fn poll<T>(within: Duration, mut f: impl FnMut() -> T, ok: impl Fn(&T) -> bool) -> T {
    let until = Instant::now() + within;
    loop {
        let v = f();
        if ok(&v) || Instant::now() >= until {
            return v;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn server_starts_under_the_shim_without_hanging() {
    let started = Instant::now();
    let node = SteppableNode::start();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "redis-server took {:?} to start under the shim",
        started.elapsed()
    );
    assert!(has_shim_loaded(&node), "the shim is not loaded");
    assert_near(
        "TIME at offset 0",
        server_time_us(&node),
        host_time_us(),
        1_000_000,
    );
}

#[test]
fn without_an_offset_file_the_shim_passes_through() {
    let node = RedisNode::start_with_env(&[], &[("LD_PRELOAD", shim().to_str().unwrap())]);
    assert!(has_shim_loaded(&node), "the shim is not loaded");
    assert_near("TIME", server_time_us(&node), host_time_us(), 1_000_000);
}

#[test]
fn time_moves_by_the_step() {
    let node = SteppableNode::start();
    let before = server_time_us(&node);
    node.step(HOUR_MS);
    assert_eq!(node.offset(), HOUR_MS);
    let ahead = server_time_us(&node);
    assert_near("TIME after +1 h", ahead - before, HOUR_MS * 1000, 2_000_000);
    node.step(-HOUR_MS);
    assert_eq!(node.offset(), 0);
    let back = server_time_us(&node);
    assert_near("TIME after -1 h", back - ahead, -HOUR_MS * 1000, 2_000_000);
    assert_near("TIME back at offset 0", back, host_time_us(), 1_000_000);
}

#[test]
fn a_forward_step_expires_keys() {
    let node = SteppableNode::start();
    assert_eq!(node.cmd(&[b"SET", b"short", b"v", b"PX", b"60000"]), "OK");
    assert_eq!(node.cmd(&[b"SET", b"long", b"v", b"PX", b"600000"]), "OK");
    assert!(node.exists(b"short"));
    node.step(120_000);
    assert!(!node.exists(b"short"), "a 60 s key outlived a +120 s step");
    assert_eq!(
        node.cmd(&[b"PTTL", b"short"]),
        "-2",
        "PTTL of the expired key"
    );
    // The control: a key with time to spare is still there, its TTL shortened by the step.
    assert!(node.exists(b"long"));
    assert_near(
        "PTTL of the 600 s key",
        pttl(&node, b"long"),
        480_000,
        2_000,
    );
}

#[test]
fn a_backward_step_lengthens_ttls() {
    let node = SteppableNode::start();
    assert_eq!(node.cmd(&[b"SET", b"k", b"v", b"PX", b"60000"]), "OK");
    assert_near("PTTL", pttl(&node, b"k"), 60_000, 2_000);
    node.step(-30_000);
    assert_near("PTTL after -30 s", pttl(&node, b"k"), 90_000, 2_000);
}

#[test]
fn uptime_follows_the_wall_clock() {
    // The quarantine's clock-step hazard: uptime_in_seconds is wall-clock time since start, so a
    // step changes it as if the node had run (or not run) that long.
    let node = SteppableNode::start();
    assert_near("uptime at start", uptime_s(&node), 0, 2);
    node.step(HOUR_MS);
    // Redis refreshes its cached clock in serverCron (10 times a second by default): poll.
    let ahead = poll(Duration::from_secs(2), || uptime_s(&node), |&u| u >= 3600);
    assert_near("uptime after +1 h", ahead, 3600, 3);
    // Stepped back past its start, the node reports a negative uptime.
    node.set_offset(-HOUR_MS);
    let behind = poll(Duration::from_secs(2), || uptime_s(&node), |&u| u < 0);
    assert_near("uptime at -1 h", behind, -3600, 3);
}
