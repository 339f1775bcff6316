//! `inspect`, `nodes` and `watch` against real nodes: the tables, `--json`, a node down, quarantined
//! nodes, and `inspect`'s verdict as its exit code (0 held, 1 free, 3 undecided or unreachable).

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{eventually, nodes, redlock, run, urls, RedisNode};

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn inspect_and_nodes_show_a_held_lock_with_its_label() {
    let n = nodes(3);
    let (code, out, _) = run(redlock(&urls(&n)).args(["--no-quarantine", "inspect", "orders:42"]));
    assert_eq!(code, 1, "free: 1, as grep's no match");
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
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(3), || n
        .iter()
        .all(|x| x.exists(b"redlock:{orders:42}:holder"))));
    let (code, out, _) = run(redlock(&urls(&n)).args(["--no-quarantine", "inspect", "orders:42"]));
    assert_eq!(code, 0, "held: 0");
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
    let (code, out, _) =
        run(redlock(&urls(&n)).args(["--no-quarantine", "--json", "inspect", "orders:42"]));
    assert_eq!(code, 0, "--json says it in the code too");
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
fn quarantined_nodes_leave_the_verdict_undecided_exit_3() {
    let n = nodes(3);
    let (code, out, _) = run(redlock(&urls(&n)).args(["inspect", "r"]));
    assert_eq!(code, 3, "undecided: 3, as for an error");
    assert!(
        out.contains("UNDECIDED") && out.matches("no (quarantined)").count() == 3,
        "{out}"
    );
}

#[test]
fn a_node_down_shows_in_its_row_and_all_down_is_one_line() {
    let n = nodes(2);
    let dead = format!("redis://127.0.0.1:{}", crate::support::free_port());
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
        code == 1
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
fn plain_keys_inspect_another_clients_lock_on_the_name_itself() {
    let n = nodes(3);
    // What rslock, redsync or node-redlock write: the name as the key, a random value.
    for node in &n {
        node.cmd(&[
            b"SET",
            b"orders:7",
            b"0123456789abcdefghij",
            b"PX",
            b"30000",
        ]);
    }
    let (code, out, _) = run(redlock(&urls(&n)).args(["--no-quarantine", "inspect", "orders:7"]));
    assert_eq!(code, 1, "under the default keys it is another key: {out}");
    let (code, out, _) = run(redlock(&urls(&n)).args([
        "--no-quarantine",
        "--plain-keys",
        "--prefix",
        "",
        "inspect",
        "orders:7",
    ]));
    assert_eq!(code, 0, "held: {out}");
    assert_eq!(out.matches("foreign").count(), 3, "{out}");
}

#[test]
fn no_output_shows_a_node_password() {
    let node = RedisNode::start_with(&["--requirepass", "hunter2-pw"]);
    let url = format!("redis://:hunter2-pw@127.0.0.1:{}", node.port);
    for args in [
        vec!["inspect", "x"],
        vec!["--json", "inspect", "x"],
        vec!["nodes"],
        vec!["--json", "nodes"],
        vec!["release", "x", "--force", "--yes"],
        vec!["--json", "release", "x", "--force", "--yes"],
    ] {
        let (code, out, err) = run(redlock(&url).args(&args));
        assert!(code != 2, "{args:?}: {err}");
        assert!(
            !out.contains("hunter2") && !err.contains("hunter2"),
            "{args:?}: {out}{err}"
        );
        if args.contains(&"nodes") {
            assert!(out.contains("127.0.0.1"), "{args:?}: {out}");
        }
    }
}

#[test]
fn the_services_prefix_from_the_environment_is_seen_and_flags_override_it() {
    let n = nodes(1);
    // What a service configured with `Config::from_env` and REDLOCK_KEY_PREFIX=svc: takes.
    let mut holder = redlock(&urls(&n))
        .env("REDLOCK_KEY_PREFIX", "svc:")
        .env("REDLOCK_QUARANTINE", "false")
        .args(["acquire", "orders:7", "--", "sleep", "3"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        eventually(Duration::from_secs(3), || n[0].exists(b"svc:{orders:7}")),
        "acquire read the prefix from the environment"
    );
    let inspect = |env: Option<&str>, flags: &[&str]| {
        let mut cmd = redlock(&urls(&n));
        cmd.env_remove("REDLOCK_KEY_PREFIX")
            .env("REDLOCK_QUARANTINE", "false");
        if let Some(prefix) = env {
            cmd.env("REDLOCK_KEY_PREFIX", prefix);
        }
        run(cmd.args(flags).args(["inspect", "orders:7"])).0
    };
    assert_eq!(
        inspect(Some("svc:"), &[]),
        0,
        "held, as the service sees it"
    );
    assert_eq!(inspect(None, &[]), 1, "the default prefix: free");
    assert_eq!(
        inspect(Some("svc:"), &["--prefix", "redlock:"]),
        1,
        "the flag wins"
    );
    assert_eq!(inspect(None, &["--prefix", "svc:"]), 0);
    // A variable the services' `from_env` would refuse is refused here too, by name.
    let (code, _, err) = run(redlock(&urls(&n))
        .env("REDLOCK_MAX_TTL", "soon")
        .args(["inspect", "orders:7"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("REDLOCK_MAX_TTL"), "{err}");
    let _ = holder.kill();
    let _ = holder.wait();
}
