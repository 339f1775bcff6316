//! The built `redlock` binary, for the CLI's tests; the real `redis-server` processes on free loopback
//! ports (stopped by pid on drop) come from the workspace's test kit (`testkit/`).
#![allow(dead_code)]

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub use testkit::{free_port, nodes, RedisNode};

/// Their URLs as one `--nodes` list.
pub fn urls(nodes: &[RedisNode]) -> String {
    testkit::urls(nodes).join(",")
}

/// The `redlock` binary with `--nodes` set (and nothing inherited from REDLOCK_NODES).
pub fn redlock(nodes: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_redlock"));
    cmd.env_remove("REDLOCK_NODES").args(["--nodes", nodes]);
    cmd
}

/// Runs it to the end: (exit code, stdout, stderr).
pub fn run(cmd: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.stdin(Stdio::null()).output().expect("redlock runs");
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// Polls `check` every 10 ms until it holds or `within` passes.
pub fn eventually(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    check()
}
