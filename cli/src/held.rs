//! The command run while something is held — `acquire`'s lock or `elect`'s leadership — and what
//! both do around it: job control, the command in its own process group, signals passed on, the
//! group stopped (SIGTERM, SIGKILL after `--kill-after`, exit [`LOST`]) when the hold is lost, and
//! the hold ended (released, resigned) whichever way the command ends.

use std::future::Future;
use std::time::Duration;

use redlock_engine::{Leadership, LockError, RenewedLock};

use crate::command::{self, exit_code};
use crate::exit::{Failure, LOST};
use crate::signals::{self, Signals};

/// What a command runs under.
pub trait Held {
    /// How ending it is named in a note when that fails ("release", "resigning").
    const ENDING: &'static str;

    /// Resolves once it is lost, with the reason when it has one to tell.
    fn lost(&self) -> impl Future<Output = Option<String>>;

    /// Ends it: owner-checked, so it cleans up what is left of ours and never touches a new
    /// holder's keys.
    fn end(self) -> impl Future<Output = Result<(), LockError>>;
}

impl Held for RenewedLock {
    const ENDING: &'static str = "release";

    async fn lost(&self) -> Option<String> {
        RenewedLock::lost(self).await;
        None
    }

    async fn end(self) -> Result<(), LockError> {
        self.release().await
    }
}

impl Held for Leadership {
    const ENDING: &'static str = "resigning";

    async fn lost(&self) -> Option<String> {
        Some(Leadership::lost(self).await.to_string())
    }

    async fn end(self) -> Result<(), LockError> {
        self.resign().await
    }
}

/// Runs `argv` (with `env`) while `held` holds, then ends `held`; the command's exit code.
/// `what` names the hold in messages (`lock on "r"`, `leadership of "n"`).
pub async fn run_command<H: Held>(
    held: H,
    what: &str,
    mut signals: Signals,
    env: &[(&str, String)],
    argv: &[String],
    kill_after: Duration,
) -> Result<u8, Failure> {
    if let Err(f) = signals.job_control() {
        let _ = held.end().await;
        return Err(f);
    }
    let mut running = match command::spawn(argv, env) {
        Ok(running) => running,
        Err(f) => {
            let _ = held.end().await;
            return Err(f);
        }
    };
    let status = loop {
        tokio::select! {
            status = running.wait() => break status,
            why = held.lost() => {
                let why = why.map(|why| format!(" ({why})")).unwrap_or_default();
                eprintln!(
                    "redlock: {what} lost{why} while the command ran; sending its process group \
                     SIGTERM"
                );
                let _ = running.stop(kill_after).await;
                let _ = held.end().await;
                return Err(Failure::new(
                    LOST,
                    format!("{what} lost; the command was stopped"),
                ));
            }
            // A terminal's Ctrl-C and Ctrl-Z reach only this process (the command's group is not
            // the terminal's foreground group): pass every one on; Ctrl-Z then stops us too.
            sig = signals.recv() => {
                running.signal(sig);
                if sig == libc::SIGTSTP {
                    signals::stop_self();
                }
            }
        }
    };
    let ended = held.end().await;
    let status = status?;
    if let Err(e) = ended {
        // The command finished while held; ending the hold failing is worth a word, not its code.
        eprintln!("redlock: {} after the command: {e}", H::ENDING);
    }
    Ok(exit_code(status))
}
