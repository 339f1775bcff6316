//! Bad input: one line on stderr, exit 2, no password; `--help` shows the exit codes.

use crate::support::{nodes, run};

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

#[test]
fn help_lists_the_exit_codes() {
    for args in [
        &["--help"][..],
        &["acquire", "--help"],
        &["inspect", "--help"],
    ] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_redlock"));
        let (code, out, _) = run(cmd.env_remove("REDLOCK_NODES").args(args));
        assert_eq!(code, 0);
        for line in ["Exit codes:", "\n  3 ", "\n  75 ", "\n  113 ", "128+N"] {
            assert!(out.contains(line), "{args:?}: {line:?} in {out}");
        }
    }
}
