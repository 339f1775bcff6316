//! Signals to `redlock acquire`: while it waits, SIGINT or SIGTERM stop the wait (exit 128 + N)
//! without running the command and leave nothing on the nodes — no fair waiter's place, no writer's
//! intent; while the command runs, they are passed on to the command's whole process group and the
//! lock is released once it exits.

use std::time::Duration;

use crate::support::{
    acquire, alive, eventually, held_on, nodes, reader_holding, soon_held_on, Bg, Pids,
};

/// The number of entries in `key`'s sorted set on each node.
fn zcards(n: &[crate::support::RedisNode], key: &str) -> Vec<String> {
    n.iter().map(|x| x.cmd_str(&["ZCARD", key])).collect()
}

/// `redlock acquire resource` running a shell that starts a worker (a `sleep` in the background)
/// and waits for it. Returns redlock, the worker's pid once the shell has written it, and the pid
/// files (dropping them kills what they name).
fn with_a_worker(n: &[crate::support::RedisNode], resource: &str) -> (Bg, i32, Pids) {
    let pids = Pids::new();
    let script = pids.worker_script("sleep 100");
    let child = Bg::spawn(acquire(n, resource).args(["--", "sh", "-c", &script]));
    let worker = pids.read("worker");
    (child, worker, pids)
}

#[test]
fn a_signal_while_waiting_withdraws_a_fair_waiters_place() {
    let n = nodes(3);
    let pids = Pids::new();
    let holder = Bg::spawn(acquire(&n, "fq").args(["--fair", "--", "sleep", "3"]));
    assert!(soon_held_on(&n, "redlock:{fq}", 3));
    let mark = pids.path("ran");
    let script = format!("echo ran > {}", mark.display());
    let waiter = Bg::spawn_piped(acquire(&n, "fq").args(["--fair", "--", "sh", "-c", &script]));
    assert!(
        eventually(Duration::from_secs(3), || zcards(&n, "redlock:{fq}:fair:q")
            .iter()
            .all(|c| c == "2")),
        "the waiter is queued behind the holder: {:?}",
        zcards(&n, "redlock:{fq}:fair:q")
    );
    waiter.signal(libc::SIGTERM);
    let (code, _, err) = waiter.output();
    assert_eq!(code, 128 + libc::SIGTERM, "{err}");
    assert!(
        err.contains("SIGTERM while waiting") && err.contains("nothing is held"),
        "{err}"
    );
    assert_eq!(
        zcards(&n, "redlock:{fq}:fair:q"),
        ["1", "1", "1"],
        "its place is gone the moment redlock exits"
    );
    assert!(!mark.exists(), "the command never ran");
    assert!(holder.wait().success());
}

#[test]
fn ctrl_c_while_waiting_withdraws_a_writers_intent() {
    let n = nodes(3);
    let reader = reader_holding(&n, "rw", "3");
    let writer = Bg::spawn_piped(acquire(&n, "rw").args(["--write", "--", "true"]));
    assert!(
        soon_held_on(&n, "redlock:{rw}:rw:intent", 2),
        "the writer's intent holds new readers back"
    );
    writer.signal(libc::SIGINT);
    let (code, _, err) = writer.output();
    assert_eq!(code, 128 + libc::SIGINT, "{err}");
    assert_eq!(held_on(&n, "redlock:{rw}:rw:intent"), 0, "withdrawn");
    // Nothing left to hold readers back.
    let (code, _, err) =
        crate::support::run(acquire(&n, "rw").args(["--shared", "-n", "--", "true"]));
    assert_eq!(code, 0, "{err}");
    assert!(reader.wait().success());
}

#[test]
fn ctrl_c_reaches_the_command_and_the_lock_is_released() {
    let n = nodes(1);
    let child = Bg::spawn(acquire(&n, "int").args(["--ttl", "10s", "--", "sleep", "20"]));
    assert!(eventually(Duration::from_secs(3), || n[0].exists(b"redlock:{int}")));
    // As a terminal's Ctrl-C: to redlock only (the command's group is not the foreground one).
    child.signal(libc::SIGINT);
    let status = child.wait();
    assert_eq!(status.code(), Some(130), "128 + SIGINT from the command");
    assert!(!n[0].exists(b"redlock:{int}"), "released");
}

#[test]
fn sigterm_reaches_everything_the_command_started() {
    let n = nodes(1);
    let (child, worker, _pids) = with_a_worker(&n, "term");
    assert!(alive(worker));
    child.signal(libc::SIGTERM);
    let status = child.wait();
    assert_eq!(
        status.code(),
        Some(128 + libc::SIGTERM),
        "the shell's own end"
    );
    assert!(
        eventually(Duration::from_secs(2), || !alive(worker)),
        "the shell's worker got it too"
    );
    assert!(!n[0].exists(b"redlock:{term}"), "released");
}

/// The state letter of `pid` (`S` sleeping, `T` stopped, ...), from `/proc`.
fn state(pid: i32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next())
        .unwrap_or('?')
}

#[test]
fn ctrl_z_stops_the_command_and_redlock_and_fg_resumes_both() {
    let n = nodes(1);
    let (child, worker, _pids) = with_a_worker(&n, "tstp");
    child.signal(libc::SIGTSTP);
    assert!(
        eventually(Duration::from_secs(2), || state(worker) == 'T'
            && state(child.pid()) == 'T'),
        "worker {}, redlock {}",
        state(worker),
        state(child.pid())
    );
    child.signal(libc::SIGCONT);
    assert!(
        eventually(Duration::from_secs(2), || state(worker) == 'S'),
        "worker {}",
        state(worker)
    );
    child.signal(libc::SIGTERM);
    assert_eq!(child.wait().code(), Some(128 + libc::SIGTERM));
    assert!(eventually(Duration::from_secs(2), || !alive(worker)));
}
