//! `elect NAME -- COMMAND` and `leader NAME [--watch]` against real nodes: the command runs while
//! leader with its term and value in its environment, a second campaign waits (or is busy with
//! `-n`), a watcher prints each new leader, a lost leadership stops the command's group (113), and
//! bad input is refused (2) with nothing left on the nodes.

use std::time::Duration;

use crate::support::{
    eventually, force_release, held_on, nodes, redlock, run, soon_held_on, urls, Bg, Pids,
    RedisNode,
};

/// `redlock --no-quarantine SUBCOMMAND ...` on `nodes` (seconds old: quarantine off).
fn cli(nodes: &[RedisNode], args: &[&str]) -> std::process::Command {
    let mut cmd = redlock(&urls(nodes));
    cmd.arg("--no-quarantine").args(args);
    cmd
}

#[test]
fn the_command_runs_while_leader_with_its_term_and_value() {
    let n = nodes(3);
    let pids = Pids::new();
    let env = pids.path("env");
    let script = format!(
        "echo \"$REDLOCK_ELECTION|$REDLOCK_TERM|$REDLOCK_LEADER_VALUE\" > {}.tmp && mv {0}.tmp {0}; \
         sleep 1; exit 7",
        env.display()
    );
    let elect = Bg::spawn_piped(&mut cli(
        &n,
        &[
            "elect",
            "jobs",
            "--value",
            "host-a:80",
            "--",
            "sh",
            "-c",
            &script,
        ],
    ));
    assert!(eventually(Duration::from_secs(5), || env.exists()));
    let seen = std::fs::read_to_string(&env).unwrap();
    let [name, term, value] = seen.trim().split('|').collect::<Vec<_>>()[..] else {
        panic!("{seen}");
    };
    assert_eq!((name, value), ("jobs", "host-a:80"));
    let term: u64 = term.parse().unwrap();

    let (code, out, err) = run(&mut cli(&n, &["leader", "jobs"]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("host-a:80 (term {term})\n"));
    let (code, out, _) = run(&mut cli(&n, &["--json", "leader", "jobs"]));
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["term"], term);
    assert_eq!(json["value"], "host-a:80");

    // The command's code is elect's; leadership ends with it.
    let (code, _, err) = elect.output();
    assert_eq!(code, 7, "{err}");
    let (code, out, err) = run(&mut cli(&n, &["leader", "jobs"]));
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains("no leader of \"jobs\""), "{err}");
    for key in ["redlock:{jobs}", "redlock:{jobs}:leader"] {
        assert_eq!(held_on(&n, key), 0, "{key}");
    }
}

#[test]
fn a_second_campaign_waits_and_a_watcher_sees_each_leader() {
    let n = nodes(3);
    let watcher = Bg::spawn_piped(&mut cli(&n, &["leader", "sched", "--watch"]));
    let first = Bg::spawn(&mut cli(
        &n,
        &["elect", "sched", "--value", "first", "--", "sleep", "1.5"],
    ));
    assert!(eventually(Duration::from_secs(5), || held_on(
        &n,
        "redlock:{sched}:leader"
    ) == 3));
    let (code, _, err) = run(&mut cli(&n, &["elect", "sched", "-n", "--", "true"]));
    assert_eq!(code, 75, "{err}");
    assert!(
        err.starts_with("redlock: error: not elected leader of \"sched\"")
            && err.lines().count() == 1,
        "{err}"
    );
    // Waits until the first resigns, then runs; long enough for the watcher to read it (a
    // leadership that begins and ends between two of its reads may be missed, as documented).
    let (code, _, err) = run(&mut cli(
        &n,
        &["elect", "sched", "--value", "second", "--", "sleep", "0.3"],
    ));
    assert_eq!(code, 0, "{err}");
    assert!(first.wait().success());

    watcher.signal(libc::SIGINT);
    let (code, out, err) = watcher.output();
    assert_eq!(code, 0, "{err}");
    let lines: Vec<(String, u64)> = out
        .lines()
        .map(|l| {
            let (value, term) = l.split_once(" (term ").unwrap();
            (
                value.to_string(),
                term.trim_end_matches(')').parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lines.iter().map(|(v, _)| v.as_str()).collect::<Vec<_>>(),
        ["first", "second"],
        "{out}"
    );
    assert!(lines[1].1 > lines[0].1, "{out}");
}

#[test]
fn a_lost_leadership_stops_the_command() {
    let n = nodes(3);
    let pids = Pids::new();
    let script = pids.worker_script("sleep 100");
    let elect = Bg::spawn_piped(&mut cli(
        &n,
        &[
            "elect", "lost", "--ttl", "1500ms", "--", "sh", "-c", &script,
        ],
    ));
    let worker = pids.read("worker");
    assert!(soon_held_on(&n, "redlock:{lost}", 3));
    force_release(&n, "lost");
    let (code, _, err) = elect.output();
    assert_eq!(code, 113, "{err}");
    assert!(
        err.contains("leadership of \"lost\" lost") && err.contains("process group"),
        "{err}"
    );
    assert!(!crate::support::alive(worker), "its worker was stopped");
}

#[test]
fn bad_input_is_refused_and_leaves_nothing() {
    let n = nodes(3);
    for args in [
        &["elect", "", "--", "true"][..],
        &["elect", "x", "--value", "", "--", "true"],
        &["leader", ""],
    ] {
        let (code, _, err) = run(&mut cli(&n, args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("invalid input"), "{args:?}: {err}");
    }
    let (code, _, err) = run(&mut cli(&n[..2], &["elect", "x", "--", "true"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("at least 3 nodes"), "{err}");
    for node in &n {
        assert_eq!(node.cmd_str(&["DBSIZE"]), "0", "{}", node.url());
    }
}
