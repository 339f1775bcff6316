//! A node that dies mid-run, and Ctrl-C: one clear error, a non-zero exit, no hang, no leftover nodes.

use std::time::{Duration, Instant};

use crate::common::{
    ended_by_dead_node, loadgen, spawned_and_stopped, stderr, wait_within, RedisNode,
};

#[test]
fn node_dying_mid_run_ends_the_run() {
    let mut nodes: Vec<RedisNode> = (0..3).map(|_| RedisNode::start()).collect();
    let urls: Vec<String> = nodes.iter().map(RedisNode::url).collect();
    let mut cmd = loadgen();
    cmd.args([
        "--nodes",
        &urls.join(","),
        "--engine",
        "redlock",
        "--concurrency",
        "4",
        "--keys",
        "1k",
    ])
    .args(["--duration", "30s", "--warmup", "0", "--quiet"]);
    let child = cmd.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let killed_at = Instant::now();
    nodes[1].kill9();
    ended_by_dead_node(child, &urls[1]);
    assert!(
        killed_at.elapsed() < Duration::from_secs(10),
        "took {:?} to notice",
        killed_at.elapsed()
    );
    // Nodes given with --nodes are never stopped by loadgen.
    assert!(
        !port_closed_quick(nodes[0].port),
        "loadgen must not stop nodes it did not start"
    );
}

fn port_closed_quick(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
}

#[test]
fn ctrl_c_stops_the_spawned_nodes() {
    let mut cmd = loadgen();
    cmd.args([
        "--spawn",
        "2",
        "--engine",
        "redlock",
        "--concurrency",
        "2",
        "--keys",
        "1k",
        "--duration",
        "30s",
    ]);
    let child = cmd.spawn().unwrap();
    let pid = child.id() as i32;
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let out = wait_within(child, Duration::from_secs(10));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("loadgen: error: interrupted"), "{err}");
    spawned_and_stopped(&err, 2);
}
