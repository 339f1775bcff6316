//! `acquire -- COMMAND` against real nodes: the command's exit code, waiting (until granted by
//! default, `--wait D`, `-n`), a refusal's code by its class (75 busy, 3 unavailable), what the
//! command finds in its environment, and the kinds (`--shared`/`--write`, `--permits`, `--fair`).

use std::time::{Duration, Instant};

use crate::support::{
    acquire, eventually, held_on, nodes, reader_holding, redlock, run, soon_held_on, urls, Bg, Pids,
};

#[test]
fn acquire_passes_the_commands_exit_code_and_refuses_when_held() {
    let n = nodes(3);
    let (code, _, _) = run(acquire(&n, "job").args(["--ttl", "5s", "--", "sh", "-c", "exit 7"]));
    assert_eq!(code, 7);
    let (code, _, err) = run(acquire(&n, "job").args(["--", "/nonexistent/cmd"]));
    assert_eq!(code, 127, "{err}");
    assert_eq!(
        held_on(&n, "redlock:{job}"),
        0,
        "released when the command cannot start"
    );
    let first = Bg::spawn(acquire(&n, "job").args(["--ttl", "5s", "--", "sleep", "2"]));
    assert!(soon_held_on(&n, "redlock:{job}", 2));
    let started = Instant::now();
    let (code, _, err) = run(acquire(&n, "job").args(["--wait", "300ms", "--", "true"]));
    assert_eq!(code, 75, "{err}");
    assert!(
        err.starts_with("redlock: error: could not lock \"job\": busy") && err.lines().count() == 1,
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    let (code, _, err) = run(acquire(&n, "job").args(["-n", "--", "true"]));
    assert_eq!(code, 75, "{err}");
    assert!(first.wait().success());
    // Free again: --wait gets it at once.
    let (code, _, _) = run(acquire(&n, "job").args(["--wait", "2s", "--", "true"]));
    assert_eq!(code, 0);
}

#[test]
fn acquire_waits_until_granted_by_default() {
    let n = nodes(3);
    let pids = Pids::new();
    let first = Bg::spawn(acquire(&n, "queue").args(["--ttl", "5s", "--", "sleep", "1.5"]));
    assert!(soon_held_on(&n, "redlock:{queue}", 3));
    let started = Instant::now();
    let mark = pids.path("ran");
    let script = format!("echo ran > {}", mark.display());
    let (code, _, err) = run(acquire(&n, "queue").args(["--", "sh", "-c", &script]));
    assert_eq!(code, 0, "{err}");
    assert!(first.wait().success());
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "it waited for the first holder: {:?}",
        started.elapsed()
    );
    assert!(mark.exists(), "the command ran once the lock was granted");
}

#[test]
fn nodes_that_cannot_decide_are_unavailable_exit_3() {
    // Quarantine on: nodes seconds old do not vote, so no majority can be won.
    let n = nodes(3);
    let (code, _, err) = run(redlock(&urls(&n)).args(["acquire", "r", "-n", "--", "true"]));
    assert_eq!(code, 3, "{err}");
    assert!(
        err.starts_with("redlock: error: could not lock \"r\": unavailable")
            && err.lines().count() == 1,
        "{err}"
    );
    let (code, _, err) =
        run(redlock(&urls(&n)).args(["acquire", "r", "--wait", "300ms", "--", "true"]));
    assert_eq!(code, 3, "a deadline sorts as its last attempt: {err}");
    let dead = format!("redis://127.0.0.1:{}", crate::support::free_port());
    let (code, _, err) = run(redlock(&dead).args(["acquire", "r", "--", "true"]));
    assert_eq!(code, 3, "no node reachable does not wait forever: {err}");
}

#[test]
fn the_command_gets_the_resource_and_its_fencing_token() {
    let n = nodes(3);
    let show = [
        "sh",
        "-c",
        "echo \"$REDLOCK_RESOURCE ${REDLOCK_FENCING_TOKEN-none}\"",
    ];
    let (code, out, err) = run(acquire(&n, "orders:42").arg("--").args(show));
    assert_eq!((code, out.trim()), (0, "orders:42 none"), "{err}");
    let mut tokens = Vec::new();
    for _ in 0..2 {
        let (code, out, err) = run(acquire(&n, "orders:42").args(["--fenced", "--"]).args(show));
        assert_eq!(code, 0, "{err}");
        let (resource, token) = out.trim().split_once(' ').unwrap();
        assert_eq!(resource, "orders:42");
        tokens.push(token.parse::<u64>().unwrap());
    }
    assert!(tokens[1] > tokens[0], "tokens grow: {tokens:?}");
}

#[test]
fn shared_holders_share_and_a_writer_waits_for_them() {
    let n = nodes(3);
    let reader = reader_holding(&n, "cat", "1.5");
    let (code, _, err) = run(acquire(&n, "cat").args(["-s", "-n", "--", "true"]));
    assert_eq!(code, 0, "a second reader gets in at once: {err}");
    let (code, _, err) = run(acquire(&n, "cat").args(["--write", "-n", "--", "true"]));
    assert_eq!(code, 75, "the writer is busy while a reader holds: {err}");
    assert_eq!(
        held_on(&n, "redlock:{cat}:rw:intent"),
        0,
        "a writer that gave up left no intent to hold readers back"
    );
    let (code, out, _) = run(redlock(&urls(&n)).args(["--no-quarantine", "inspect", "cat"]));
    assert!(code == 0 && out.contains("read"), "{out}");
    let started = Instant::now();
    let (code, _, err) = run(acquire(&n, "cat").args(["--write", "--", "true"]));
    assert_eq!(code, 0, "{err}");
    assert!(reader.wait().success());
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(500) && waited < Duration::from_secs(5),
        "it waited for the reader, and no longer: {waited:?}"
    );
    let (code, _, err) = run(acquire(&n, "cat").args(["--shared", "--fair", "--", "true"]));
    assert_eq!(code, 2, "one kind at a time: {err}");
}

#[test]
fn permits_let_k_holders_in() {
    let n = nodes(3);
    let hold = || Bg::spawn(acquire(&n, "exports").args(["--permits", "2", "--", "sleep", "2"]));
    let (a, b) = (hold(), hold());
    let (code, out, _) =
        run(redlock(&urls(&n)).args(["--no-quarantine", "--json", "inspect", "exports"]));
    let _ = (code, out);
    assert!(eventually(Duration::from_secs(3), || {
        n.iter()
            .filter(|x| x.cmd_str(&["ZCARD", "redlock:{exports}:sem"]) == "2")
            .count()
            >= 2
    }));
    let (code, _, err) = run(acquire(&n, "exports").args(["--permits", "2", "-n", "--", "true"]));
    assert_eq!(code, 75, "a third is busy: {err}");
    let (code, _, err) = run(acquire(&n, "exports").args(["--permits", "3", "-n", "--", "true"]));
    assert_eq!(code, 2, "holders disagreeing on K is a usage error: {err}");
    assert!(a.wait().success() && b.wait().success());
}

#[test]
fn fair_waiters_get_the_lock_in_arrival_order() {
    let n = nodes(3);
    let pids = Pids::new();
    let order = pids.path("order");
    let holder = Bg::spawn(acquire(&n, "line").args(["--fair", "--", "sleep", "1"]));
    assert!(soon_held_on(&n, "redlock:{line}", 2));
    let mut waiters = Vec::new();
    for name in ["first", "second", "third"] {
        let script = format!("echo {name} >> {}", order.display());
        waiters.push(Bg::spawn(
            acquire(&n, "line").args(["--fair", "--", "sh", "-c", &script]),
        ));
        // Each enqueued before the next arrives.
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(holder.wait().success());
    for w in waiters {
        assert!(w.wait().success());
    }
    let got = std::fs::read_to_string(&order).unwrap();
    assert_eq!(got, "first\nsecond\nthird\n");
}
