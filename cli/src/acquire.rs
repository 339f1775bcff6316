//! `acquire RESOURCE --ttl T [--wait W] -- COMMAND...`: takes the lock (renewed every third of its
//! TTL, labeled for `inspect`), runs the command, releases the lock when it ends and exits with its
//! code.
//!
//! If the lock is lost while the command runs (a renewal could not win a majority), the command gets
//! SIGTERM at once — it no longer holds what it was promised — then SIGKILL after `--kill-after`,
//! and `redlock` exits with [`LOST`]. Ctrl-C and SIGTERM to `redlock` are passed on to the command
//! (a terminal's Ctrl-C reaches it anyway), and the lock is released once it has exited.

use std::process::ExitStatus;
use std::time::Duration;

use redlock_engine::{LockError, RenewPolicy};
use tokio::process::{Child, Command};
use tokio::signal::unix::{signal, SignalKind};

use crate::args::{Command as Sub, Options};
use crate::exit::{Failure, FAILED, LOST, NOT_ACQUIRED, USAGE};

pub async fn run(opts: &Options) -> Result<u8, Failure> {
    let Sub::Acquire {
        resource,
        ttl,
        wait,
        label,
        kill_after,
        command,
    } = &opts.command
    else {
        unreachable!("dispatched on Acquire")
    };
    // Before anything is taken: a SIGINT or SIGTERM that arrives while the lock is being acquired or
    // the command started is then kept for the loop below (passed on, then the lock released) instead
    // of killing this process with the lock still held until its TTL.
    let mut term =
        signal(SignalKind::terminate()).map_err(|e| Failure::new(FAILED, e.to_string()))?;
    let mut int =
        signal(SignalKind::interrupt()).map_err(|e| Failure::new(FAILED, e.to_string()))?;
    let label = label.clone().unwrap_or_else(|| default_label(command));
    // One attempt, or retries until --wait: the engine's own acquire, with its deadline.
    let until = (!wait.is_zero()).then_some(*wait);
    let engine = crate::connect::engine(opts, Some(clean(&label)), until).await?;
    let lock = if wait.is_zero() {
        engine.try_acquire(resource, *ttl).await
    } else {
        engine.acquire(resource, *ttl).await
    };
    let lock = match lock {
        Ok(lock) => lock,
        Err(e @ LockError::InvalidInput(_)) => return Err(Failure::new(USAGE, e.to_string())),
        Err(e) => return Err(Failure::new(NOT_ACQUIRED, format!("not acquired: {e}"))),
    };
    let lock = engine
        .renew(lock, RenewPolicy::default())
        .map_err(|e| Failure::new(USAGE, e.to_string()))?;
    let mut child = match Command::new(&command[0]).args(&command[1..]).spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = lock.release().await;
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return Err(Failure::new(
                code,
                format!("cannot run {:?}: {e}", command[0]),
            ));
        }
    };
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            _ = lock.lost() => {
                eprintln!("redlock: lock on {resource:?} lost while the command ran; sending it SIGTERM");
                let _ = stop(&mut child, *kill_after).await;
                return Err(Failure::new(LOST, format!("lock on {resource:?} lost; the command was stopped")));
            }
            _ = term.recv() => send(&child, libc::SIGTERM),
            // The terminal sent it to the command too; only a SIGINT sent to redlock alone needs
            // passing on, and a second copy is harmless.
            _ = int.recv() => send(&child, libc::SIGINT),
        }
    };
    let released = lock.release().await;
    let status =
        status.map_err(|e| Failure::new(FAILED, format!("waiting for the command: {e}")))?;
    if let Err(e) = released {
        // The command finished under the lock; the release failing is worth a word, not its code.
        eprintln!("redlock: release after the command: {e}");
    }
    Ok(exit_code(status))
}

/// SIGTERM, then SIGKILL if the command is still there after `grace`.
async fn stop(child: &mut Child, grace: Duration) -> std::io::Result<ExitStatus> {
    send(child, libc::SIGTERM);
    match tokio::time::timeout(grace, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            child.start_kill()?;
            child.wait().await
        }
    }
}

fn send(child: &Child, sig: i32) {
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) has no memory-safety preconditions; the pid is our own child, not reaped
        // yet (`id()` is `None` once it has been waited for).
        unsafe {
            libc::kill(pid as i32, sig);
        }
    }
}

/// The shell's convention: the code, or 128 + the signal that ended the command.
fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(sig)) => (128 + sig) as u8,
        _ => FAILED,
    }
}

/// `redlock acquire on HOST pid N: COMMAND`.
fn default_label(command: &[String]) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    format!(
        "redlock acquire on {host} pid {}: {}",
        std::process::id(),
        command.join(" ")
    )
}

/// A label the library accepts: control characters dropped, at most 256 bytes (on a char boundary).
fn clean(label: &str) -> String {
    let mut out: String = label.chars().filter(|c| !c.is_control()).collect();
    while out.len() > 256 {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_cleaned_to_what_the_library_takes() {
        assert_eq!(clean("a\tb\nc"), "abc");
        let long = clean(&"é".repeat(200));
        assert!(long.len() <= 256 && long.chars().all(|c| c == 'é'));
        assert!(default_label(&["sleep".into(), "5".into()]).ends_with(": sleep 5"));
    }
}
