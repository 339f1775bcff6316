//! The `redlock` binary against real nodes: every subcommand, `--json`, a node down, quarantined
//! nodes, `acquire -- COMMAND` with its exit codes (the command's, 75 not acquired, 113 lost
//! mid-command), Ctrl-C, and bad input (one line, non-zero, no password).

mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use support::{eventually, nodes, redlock, run, urls};

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn inspect_and_nodes_show_a_held_lock_with_its_label() {
    let n = nodes(3);
    let (code, out, _) = run(redlock(&urls(&n)).args(["--no-quarantine", "inspect", "orders:42"]));
    assert_eq!(code, 0);
    assert!(
        out.starts_with("orders:42: FREE (held on 0, free on 3"),
        "{out}"
    );
    let mut holder = redlock(&urls(&n))
        .args([
            "--no-quarantine",
            "acquire",
            "orders:42",
            "--ttl",
            "30s",
            "--label",
            "nightly export",
        ])
        .args(["--", "sleep", "3"])
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(3), || n
        .iter()
        .all(|x| x.exists(b"redlock:{orders:42}:holder"))));
    let (code, out, _) = run(redlock(&urls(&n)).args(["--no-quarantine", "inspect", "orders:42"]));
    assert_eq!(code, 0);
    assert!(out.starts_with("orders:42: HELD (held on 3"), "{out}");
    assert_eq!(out.matches("exclusive").count(), 3, "{out}");
    assert_eq!(out.matches("nightly export").count(), 3, "{out}");
    // Every row's cells sit under their headers.
    let lines: Vec<&str> = out.lines().collect();
    let column = lines[1].find("LABEL").unwrap();
    assert!(
        lines[2..]
            .iter()
            .all(|l| l.find("nightly export") == Some(column)),
        "{out}"
    );
    let ttl = lines[1].find("TTL").unwrap();
    assert!(
        lines[2..]
            .iter()
            .all(|l| l[ttl..].starts_with(|c: char| c.is_ascii_digit())),
        "{out}"
    );
    let (_, out, _) =
        run(redlock(&urls(&n)).args(["--no-quarantine", "--json", "inspect", "orders:42"]));
    let v = json(&out);
    assert_eq!(v["verdict"], "held");
    assert_eq!(v["nodes"][0]["label"], "nightly export");
    assert!(v["nodes"][0]["ttl_ms"].as_u64().unwrap() <= 30_000);
    assert_eq!(
        v["nodes"][0]["ours"], false,
        "the CLI's own engine holds nothing"
    );
    let (code, out, _) = run(redlock(&urls(&n)).args(["--json", "nodes"]));
    assert_eq!(code, 0);
    let v = json(&out);
    for node in v["nodes"].as_array().unwrap() {
        assert_eq!(node["connected"], true);
        // Quarantine on (the default): these nodes are seconds old.
        assert_eq!(
            (node["votes"].clone(), node["quarantine"].clone()),
            (false.into(), "quarantined".into())
        );
        assert_eq!(node["run_id"].as_str().unwrap().len(), 40);
    }
    let (_, out, _) = run(redlock(&urls(&n)).args(["nodes"]));
    assert!(
        out.starts_with("NODE") && out.lines().count() == 4 && out.contains("left"),
        "{out}"
    );
    assert!(holder.wait().unwrap().success());
    assert!(
        n.iter().all(|x| !x.exists(b"redlock:{orders:42}")),
        "released after the command"
    );
}

#[test]
fn quarantined_nodes_leave_the_verdict_undecided_and_acquire_refused() {
    let n = nodes(3);
    let (code, out, _) = run(redlock(&urls(&n)).args(["inspect", "r"]));
    assert_eq!(code, 0);
    assert!(
        out.contains("UNDECIDED") && out.matches("no (quarantined)").count() == 3,
        "{out}"
    );
    let (code, _, err) =
        run(redlock(&urls(&n)).args(["acquire", "r", "--ttl", "5s", "--", "true"]));
    assert_eq!(code, 75, "{err}");
    assert!(
        err.starts_with("redlock: error: not acquired") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn a_node_down_shows_in_its_row_and_all_down_is_one_line() {
    let n = nodes(2);
    let dead = format!("redis://127.0.0.1:{}", support::free_port());
    let set = format!("{},{dead}", urls(&n));
    let (code, out, _) = run(redlock(&set).args(["--no-quarantine", "nodes"]));
    assert_eq!(code, 0);
    let row = out.lines().find(|l| l.starts_with(&dead)).unwrap();
    assert!(
        row.contains(" no ") && row.contains("Connection refused"),
        "{row}"
    );
    let (code, out, _) = run(redlock(&set).args(["--no-quarantine", "inspect", "x"]));
    assert!(
        code == 0
            && out.contains("FREE")
            && out.contains("no answer")
            && out.contains(&format!("  {dead}/0: connect failed")),
        "{out}"
    );
    let (code, out, err) =
        run(redlock(&format!("{dead},redis://u:hunter2@127.0.0.1:1")).args(["inspect", "x"]));
    assert_eq!(code, 3, "{err}");
    assert!(
        out.is_empty() && err.lines().count() == 1 && err.contains("no node reachable"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn release_needs_force_and_confirmation_and_keeps_the_fence_counter() {
    let n = nodes(3);
    for x in &n {
        x.cmd_str(&[
            "SET",
            "redlock:{stuck}",
            "someone-elses-value",
            "PX",
            "60000",
        ]);
        x.cmd_str(&["SET", "redlock:{stuck}:fence", "00000000000000000099"]);
    }
    let (code, _, err) = run(redlock(&urls(&n)).args(["release", "stuck"]));
    assert_eq!(code, 2);
    assert!(err.contains("--force"), "{err}");
    // Not a terminal and no --yes: refused, nothing deleted.
    let (code, _, err) = run(redlock(&urls(&n)).args(["release", "--force", "stuck"]));
    assert_eq!(code, 2, "{err}");
    assert!(n.iter().all(|x| x.exists(b"redlock:{stuck}")));
    let (code, out, _) = run(redlock(&urls(&n)).args(["release", "--force", "--yes", "stuck"]));
    assert_eq!(code, 0);
    assert!(out.contains("3 node(s) answered, 3 held it"), "{out}");
    assert!(n
        .iter()
        .all(|x| !x.exists(b"redlock:{stuck}") && x.exists(b"redlock:{stuck}:fence")));
    let (_, out, _) =
        run(redlock(&urls(&n)).args(["--json", "release", "--force", "--yes", "stuck"]));
    assert_eq!(json(&out)["deleted_on"], 0);
    // A majority down: it cannot say the lock is gone.
    let dead = |_| format!("redis://127.0.0.1:{}", support::free_port());
    let set = format!("{},{},{}", n[0].url(), dead(1), dead(2));
    let (code, _, err) = run(redlock(&set).args(["release", "--force", "--yes", "stuck"]));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("only 1 node(s) answered, 2 needed"), "{err}");
}

#[test]
fn watch_refreshes_until_its_count() {
    let n = nodes(1);
    let started = Instant::now();
    let (code, out, _) =
        run(redlock(&urls(&n)).args(["--json", "watch", "w", "--every", "100ms", "--count", "3"]));
    assert_eq!(code, 0);
    let views: Vec<_> = out.lines().map(json).collect();
    assert_eq!(views.len(), 3);
    assert!(views.iter().all(|v| v["resource"] == "w"));
    assert!(started.elapsed() >= Duration::from_millis(200));
    let (_, out, _) =
        run(redlock(&urls(&n)).args(["watch", "w", "--every", "50ms", "--count", "2"]));
    assert_eq!(out.matches("w: ").count(), 2, "{out}");
}

#[test]
fn acquire_passes_the_commands_exit_code_and_refuses_when_held() {
    let n = nodes(3);
    let q = ["--no-quarantine", "acquire", "job", "--ttl", "5s"];
    let (code, _, _) = run(redlock(&urls(&n))
        .args(q)
        .args(["--", "sh", "-c", "exit 7"]));
    assert_eq!(code, 7);
    let (code, _, err) = run(redlock(&urls(&n)).args(q).args(["--", "/nonexistent/cmd"]));
    assert_eq!(code, 127, "{err}");
    let mut first = redlock(&urls(&n))
        .args(q)
        .args(["--", "sleep", "2"])
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(3), || n
        .iter()
        .filter(|x| x.exists(b"redlock:{job}"))
        .count()
        >= 2));
    let started = Instant::now();
    let (code, _, err) = run(redlock(&urls(&n))
        .args(q)
        .args(["--wait", "300ms", "--", "true"]));
    assert_eq!(code, 75, "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(first.wait().unwrap().success());
    // Free again: --wait gets it at once.
    let (code, _, _) = run(redlock(&urls(&n))
        .args(q)
        .args(["--wait", "2s", "--", "true"]));
    assert_eq!(code, 0);
}

#[test]
fn a_lock_lost_mid_command_stops_the_command_with_exit_113() {
    let n = nodes(3);
    let marker = std::env::temp_dir().join(format!("redlock-cli-term-{}", support::free_port()));
    let script = format!(
        "trap 'echo term > {}; kill $!; exit 143' TERM; sleep 20 & wait",
        marker.display()
    );
    let started = Instant::now();
    let child = redlock(&urls(&n))
        .args([
            "--no-quarantine",
            "acquire",
            "lost",
            "--ttl",
            "1500ms",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(3), || n
        .iter()
        .all(|x| x.exists(b"redlock:{lost}"))));
    // Someone else's value on a majority: the next renewal finds it and the lock is lost.
    for x in &n[..2] {
        x.cmd_str(&["SET", "redlock:{lost}", "another-holder", "PX", "60000"]);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(113));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap().trim(),
        "term",
        "the command got SIGTERM"
    );
    let _ = std::fs::remove_file(&marker);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lost"), "{err}");
}

#[test]
fn ctrl_c_reaches_the_command_and_the_lock_is_released() {
    let n = nodes(1);
    let mut child = redlock(&urls(&n))
        .args([
            "--no-quarantine",
            "acquire",
            "int",
            "--ttl",
            "10s",
            "--",
            "sleep",
            "20",
        ])
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(3), || n[0].exists(b"redlock:{int}")));
    let pid = child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "128 + SIGINT from the command");
    assert!(!n[0].exists(b"redlock:{int}"), "released");
}

#[test]
fn bad_input_is_one_line_and_non_zero_without_passwords() {
    let n = nodes(1);
    let cases: [&[&str]; 6] = [
        &[
            "--nodes",
            "redis://ops:hunter2@127.0.0.1:notaport",
            "inspect",
            "x",
        ],
        &["--nodes", "http://ops:hunter2@h:1", "nodes"],
        &[
            "--nodes",
            &n[0].url(),
            "acquire",
            "x",
            "--ttl",
            "5q",
            "--",
            "true",
        ],
        &["--nodes", &n[0].url(), "acquire", "x", "--ttl", "5s"],
        &[
            "--nodes",
            &n[0].url(),
            "inspect",
            "x",
            "redis://ops:hunter2@h:1",
        ],
        &[
            "--nodes",
            &n[0].url(),
            "--no-quarantine",
            "acquire",
            "x",
            "--ttl",
            "2m",
            "--",
            "true",
        ],
    ];
    for args in cases {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_redlock"));
        let (code, out, err) = run(cmd.env_remove("REDLOCK_NODES").args(args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            out.is_empty() && err.lines().count() == 1,
            "{args:?}: {err}"
        );
        assert!(
            err.starts_with("redlock: error: ") && !err.contains("hunter2"),
            "{err}"
        );
    }
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_redlock"));
    let (code, _, err) = run(cmd.env("REDLOCK_NODES", "").args(["inspect", "x"]));
    assert_eq!(code, 2, "{err}");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_redlock"));
    let (code, out, _) = run(cmd
        .env("REDLOCK_NODES", "redis://ops:hunter2@h:1")
        .arg("--help"));
    assert!(
        code == 0 && out.contains("REDLOCK_NODES") && !out.contains("hunter2"),
        "{out}"
    );
}

/// `release --force` on a terminal (a pty from util-linux's `script`): `n` keeps the lock, `y` breaks it.
#[test]
fn the_prompt_on_a_terminal_takes_no_for_an_answer() {
    let n = nodes(1);
    n[0].cmd_str(&["SET", "redlock:{asked}", "x", "PX", "60000"]);
    let line = format!(
        "{} --nodes {} --no-quarantine release --force asked",
        env!("CARGO_BIN_EXE_redlock"),
        n[0].url()
    );
    for (answer, code, gone) in [("n", 1, false), ("y", 0, true)] {
        let mut child = std::process::Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .env_remove("REDLOCK_NODES")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("util-linux script");
        // Answer once the question is up.
        std::thread::sleep(Duration::from_millis(800));
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("{answer}\n").as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(code), "{text}");
        assert!(text.contains("[y/N]"), "{text}");
        assert_eq!(!n[0].exists(b"redlock:{asked}"), gone, "{answer}: {text}");
    }
}
