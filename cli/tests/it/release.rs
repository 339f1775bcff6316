//! `release --force` against real nodes: it needs `--force`, asks on a terminal (`n` keeps the
//! lock), refuses off one without `--yes`, keeps the fence counter, and says so when no majority
//! answered.

use std::process::Stdio;
use std::time::Duration;

use crate::support::{nodes, redlock, run, urls};

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
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
    let dead = |_| format!("redis://127.0.0.1:{}", crate::support::free_port());
    let set = format!("{},{},{}", n[0].url(), dead(1), dead(2));
    let (code, _, err) = run(redlock(&set).args(["release", "--force", "--yes", "stuck"]));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("only 1 node(s) answered, 2 needed"), "{err}");
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
