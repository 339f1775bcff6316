//! A lock lost while the command runs — force-released, or its nodes killed — stops the command's
//! whole process group: SIGTERM at once, SIGKILL after `--kill-after` for what ignores it, exit 113.
//! The commands fork workers (`sh -c 'sleep 100 & wait'`): the worker must be gone too.

use std::time::{Duration, Instant};

use crate::support::{acquire, alive, force_release, nodes, soon_held_on, Bg, Pids};

#[test]
fn a_force_released_lock_stops_the_command_and_its_worker() {
    let n = nodes(3);
    let pids = Pids::new();
    let marker = pids.path("term");
    let trap = format!(
        "trap 'echo term > {}; wait; exit 143' TERM",
        marker.display()
    );
    let script = pids.worker_script(&format!("{trap}; sleep 100"));
    let child =
        Bg::spawn_piped(acquire(&n, "lost").args(["--ttl", "1500ms", "--", "sh", "-c", &script]));
    let worker = pids.read("worker");
    assert!(soon_held_on(&n, "redlock:{lost}", 3));
    let started = Instant::now();
    force_release(&n, "lost");
    let (code, _, err) = child.output();
    assert_eq!(code, 113, "{err}");
    assert!(
        err.contains("lost") && err.contains("process group"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap().trim(),
        "term",
        "the command got SIGTERM"
    );
    assert!(!alive(worker), "its worker was stopped with it");
}

#[test]
fn a_lock_lost_with_its_nodes_kills_a_worker_that_ignores_sigterm() {
    let mut n = nodes(3);
    let pids = Pids::new();
    // The worker ignores SIGTERM; the shell does not, so it exits at once and leaves the worker.
    let script = pids.worker_script("(trap '' TERM; exec sleep 100)");
    let child = Bg::spawn_piped(acquire(&n, "gone").args([
        "--ttl",
        "1500ms",
        "--kill-after",
        "700ms",
        "--",
        "sh",
        "-c",
        &script,
    ]));
    let worker = pids.read("worker");
    assert!(soon_held_on(&n, "redlock:{gone}", 3));
    // A majority gone: no renewal can win, and the lock is lost when its validity ends.
    n[0].kill9();
    n[1].kill9();
    let killed = Instant::now();
    let (code, _, err) = child.output();
    assert_eq!(code, 113, "{err}");
    let took = killed.elapsed();
    assert!(
        took >= Duration::from_millis(700) && took < Duration::from_secs(6),
        "lost within the TTL, then the grace: {took:?}"
    );
    assert!(!alive(worker), "SIGKILL after the grace reached the worker");
}
