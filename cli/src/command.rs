//! The command `acquire` runs under the lock, in a process group of its own.
//!
//! Why a group: a lost lock must stop everything the command started, not only the process
//! `redlock` spawned — `sh -c 'worker & wait'` leaves the worker running when only the shell is
//! signalled, and the worker then runs without the lock. `kill(-pgid)` reaches them all (as
//! `timeout(1)` does). The price is the one `timeout(1)` pays: the group is not the terminal's
//! foreground group, so the terminal's Ctrl-C reaches `redlock`, which passes it on, and a command
//! that reads the terminal is stopped (SIGTTIN) — hold locks around batch work, not editors.
//!
//! On Linux `redlock` is also the group's subreaper: the command's orphans become its children, so
//! it can reap them and tell "all gone" from "zombies no init has reaped yet" (containers often run
//! an init that reaps nothing).

use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::exit::{Failure, FAILED};

/// A running command: the child and its process group (the child's pid).
pub struct Running {
    pub child: Child,
    pgid: i32,
}

/// Starts `argv` in a new process group with `env` added to its environment.
///
/// # Errors
/// The shell's codes: 127 if the program is not found, 126 if it cannot be run.
pub fn spawn(argv: &[String], env: &[(&str, String)]) -> Result<Running, Failure> {
    become_subreaper();
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).process_group(0);
    for (name, value) in env {
        cmd.env(name, value);
    }
    match cmd.spawn() {
        Ok(child) => {
            // `spawn` returns once the child has exec'd, so it is in its group already.
            let pgid = child.id().map_or(0, |pid| pid as i32);
            Ok(Running { child, pgid })
        }
        Err(e) => {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            Err(Failure::new(code, format!("cannot run {:?}: {e}", argv[0])))
        }
    }
}

impl Running {
    /// Sends `sig` to every process of the command's group.
    pub fn signal(&self, sig: i32) {
        if self.pgid > 0 {
            // SAFETY: kill(2) has no memory-safety preconditions. A negative pid names the group the
            // command leads; it stays ours while any of its members lives (a group id is not reused
            // while the group exists).
            unsafe {
                libc::kill(-self.pgid, sig);
            }
        }
    }

    /// Waits for the command (the group's leader) to end.
    pub async fn wait(&mut self) -> Result<ExitStatus, Failure> {
        self.child
            .wait()
            .await
            .map_err(|e| Failure::new(FAILED, format!("waiting for the command: {e}")))
    }

    /// Stops the whole group: SIGTERM to all of it, then SIGKILL to whatever is left after
    /// `grace` — the command or anything it started.
    pub async fn stop(&mut self, grace: Duration) -> Result<ExitStatus, Failure> {
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + grace;
        let status = match tokio::time::timeout_at(deadline, self.child.wait()).await {
            Ok(status) => status.map_err(|e| Failure::new(FAILED, e.to_string()))?,
            Err(_) => {
                self.signal(libc::SIGKILL);
                self.wait().await?
            }
        };
        // The leader is gone; what it started may not be.
        let mut killed = false;
        while self.group_alive() {
            if !killed && Instant::now() >= deadline {
                self.signal(libc::SIGKILL);
                killed = true;
            } else if killed && Instant::now() >= deadline + Duration::from_secs(1) {
                break; // Unkillable (uninterruptible sleep): nothing more a signal can do.
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(status)
    }

    /// Whether a live (non-zombie) process is left in the group, once the leader was reaped. Reaps
    /// those of the group's members that are ours (orphans, with the subreaper) first.
    fn group_alive(&self) -> bool {
        if self.pgid <= 0 {
            return false;
        }
        // SAFETY: waitpid(2) and kill(2) have no memory-safety preconditions (a null status pointer
        // is allowed). Called only after the leader was waited for, so this cannot reap the child
        // tokio still waits on.
        unsafe {
            while libc::waitpid(-self.pgid, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
            libc::kill(-self.pgid, 0) == 0
        }
    }
}

/// The shell's convention: the code, or 128 + the signal that ended the command.
pub fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(sig)) => (128 + sig) as u8,
        _ => FAILED,
    }
}

/// Makes this process the subreaper of its descendants (Linux; elsewhere init reaps the orphans).
fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) takes no pointers; failing only loses the reaping.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}
