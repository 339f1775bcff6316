//! Scenario 10's setup: find libfaketime, installing Debian's `faketime` package when it is missing and
//! we are root. Without it (and without root) scenario 10 is skipped with a message saying how to get it.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::procs::Proc;

/// Where Debian puts the preload library (multiarch first).
fn locate() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/usr/lib") {
        for entry in dir.flatten() {
            candidates.push(entry.path().join("faketime/libfaketime.so.1"));
        }
    }
    candidates.push("/usr/lib/faketime/libfaketime.so.1".into());
    candidates.push("/usr/local/lib/faketime/libfaketime.so.1".into());
    candidates.into_iter().find(|p| p.is_file())
}

/// libfaketime's path, or why scenario 10 cannot run.
pub fn locate_or_install() -> Result<PathBuf, String> {
    if let Some(path) = locate() {
        return Ok(path);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("libfaketime is not installed and this is not root; \
                    `sudo apt-get install -y faketime` enables it"
            .into());
    }
    eprintln!("chaos: installing Debian's faketime package for scenario 10");
    // The package lists may be missing on a fresh machine: update once if the first install fails.
    if !apt(&["install", "-y", "-qq", "faketime"]) {
        apt(&["update", "-qq"]);
        apt(&["install", "-y", "-qq", "faketime"]);
    }
    locate().ok_or_else(|| "installing the faketime package failed".into())
}

/// Runs `apt-get args`, bounded to 5 minutes; whether it succeeded.
fn apt(args: &[&str]) -> bool {
    let mut cmd = Command::new("apt-get");
    cmd.args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let Ok(mut proc) = Proc::spawn("apt-get", cmd) else {
        return false;
    };
    let until = Instant::now() + Duration::from_secs(300);
    while Instant::now() < until {
        if let Some(status) = proc.try_wait() {
            return status.success();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    proc.kill();
    false
}
