//! The README's quick-start program is `examples/quickstart.rs`, word for word, and it runs: against
//! one real node started here, as its own process (the built example, given the node's URL).

use std::path::{Path, PathBuf};
use std::process::Command;

const README: &str = include_str!("../../README.md");
const QUICKSTART: &str = include_str!("../../examples/quickstart.rs");

/// The text of the README's first ```` ```rust ```` block (its fence's info string may add
/// attributes, `rust,no_run`).
fn first_rust_block(markdown: &str) -> Option<String> {
    let mut lines = markdown.lines();
    lines.find(|l| l.trim_start().starts_with("```rust"))?;
    let body: Vec<&str> = lines.take_while(|l| l.trim_start() != "```").collect();
    Some(body.join("\n") + "\n")
}

#[test]
fn the_readme_program_is_the_quickstart_example() {
    let block = first_rust_block(README).expect("README.md has a ```rust block");
    if block != QUICKSTART {
        let first_difference = block
            .lines()
            .zip(QUICKSTART.lines())
            .position(|(a, b)| a != b)
            .map_or("one is a prefix of the other".to_string(), |i| {
                format!("line {} of the block", i + 1)
            });
        panic!(
            "README.md's first ```rust block and examples/quickstart.rs differ ({first_difference}): \
             copy one into the other"
        );
    }
}

/// `target/<profile>/examples/quickstart`: where `cargo test` leaves the example it built beside this
/// test binary (`target/<profile>/deps/it-<hash>`). Built here when it is missing or older than its
/// source (as after `cargo test --test it`, which builds no example).
fn quickstart_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    let binary = profile_dir
        .join("examples")
        .join(format!("quickstart{}", std::env::consts::EXE_SUFFIX));
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quickstart.rs");
    let modified = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
    let fresh = matches!((modified(&binary), modified(&source)), (Some(b), Some(s)) if b >= s);
    if !fresh {
        let mut build = Command::new(env!("CARGO"));
        build.args([
            "build",
            "--quiet",
            "-p",
            "redlock-engine",
            "--example",
            "quickstart",
        ]);
        if profile_dir.ends_with("release") {
            build.arg("--release");
        }
        let status = build
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo build --example quickstart");
        assert!(status.success(), "cargo build --example quickstart failed");
    }
    binary
}

#[test]
fn the_quickstart_example_runs_against_a_real_node() {
    let node = testkit::RedisNode::start();
    let out = Command::new(quickstart_binary())
        .arg(node.url())
        .output()
        .expect("run the quickstart example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "quickstart failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    for line in ["locked orders:42", "second caller refused", "released"] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}");
    }
    assert!(
        !node.exists(b"redlock:{orders:42}"),
        "the lock was left on the node"
    );
}
