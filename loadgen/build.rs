//! Records the versions of the crates under comparison (from the workspace Cargo.lock) and of rustc, so
//! every report says exactly what was measured.

use std::process::Command;

fn main() {
    let lock_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock");
    println!("cargo:rerun-if-changed={lock_path}");
    println!("cargo:rerun-if-changed=build.rs");
    let lock = std::fs::read_to_string(lock_path).unwrap_or_default();
    for (krate, var) in [
        ("redlock-engine", "LOADGEN_VER_REDLOCK_ENGINE"),
        ("rslock", "LOADGEN_VER_RSLOCK"),
        ("redis", "LOADGEN_VER_REDIS_RS"),
        ("fred", "LOADGEN_VER_FRED"),
        ("tokio", "LOADGEN_VER_TOKIO"),
    ] {
        println!("cargo:rustc-env={var}={}", locked_version(&lock, krate));
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=LOADGEN_RUSTC={version}");
    println!("cargo:rustc-env=LOADGEN_ENGINE_COMMIT={}", engine_commit());
}

/// The commit the engine was built from, `-dirty` when its sources differ from it; `unknown` outside git.
fn engine_commit() -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
    }
    println!("cargo:rerun-if-changed={root}/src");
    let Some(commit) = git(&["rev-parse", "--short=10", "HEAD"]) else {
        return "unknown".into();
    };
    let dirty =
        git(&["status", "--porcelain", "--", "src", "Cargo.toml"]).is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    }
}

/// The version of the first `[[package]]` named `name` in a Cargo.lock.
fn locked_version(lock: &str, name: &str) -> String {
    let needle = format!("name = \"{name}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == needle {
            if let Some(v) = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("version = "))
            {
                return v.trim_matches('"').to_string();
            }
        }
    }
    "unknown".into()
}
