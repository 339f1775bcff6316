//! Exit codes and the failure every subcommand returns.
//!
//! The codes follow `flock(1)` and `grep(1)` where they can: the caller's script branches on them
//! without reading stderr. `acquire` sorts a refused lock by the library's [`ErrorClass`] — busy
//! (wait longer), unavailable (back off), invalid (fix the call) — so each has a code of its own.
//! [`HELP`] is the same list as `--help` shows it.

use redlock_engine::{ErrorClass, LockError, Verdict};

/// `inspect`: the resource is free on a majority (0 means held). Elsewhere: the operation failed
/// (a forced release no majority answered, `n` at the prompt).
pub const FAILED: u8 = 1;
/// Bad usage: options, URLs, durations, no `--force`; and a call the library refuses as invalid
/// (a TTL above `--max-ttl`, a permit count the holders disagree on).
pub const USAGE: u8 = 2;
/// Unavailable: no node reachable; `acquire`: the nodes could not decide (down, slow, quarantined)
/// within the wait; `inspect`: the verdict is undecided.
pub const UNAVAILABLE: u8 = 3;
/// `acquire`: busy — another owner holds the lock (after `-n`'s one attempt, or all of `--wait`).
/// `EX_TEMPFAIL`: try again later.
pub const BUSY: u8 = 75;
/// `acquire`: the lock was lost while the command ran (renewal failed, or it was force-released);
/// the command's process group got SIGTERM, then SIGKILL after `--kill-after`.
pub const LOST: u8 = 113;
/// `acquire` was stopped by signal N (Ctrl-C, SIGTERM, SIGHUP) while it waited: exit 128 + N,
/// as a shell reports it, with nothing held and nothing left on the nodes.
pub const SIGNALLED: u8 = 128;

/// The list for `--help` (a test checks it names every code above).
pub const HELP: &str = "\
Exit codes:
  0    done; `inspect`: the resource is held; `leader`: there is a leader
  1    the operation failed; `inspect`: the resource is free; `leader`: no leader
  2    bad usage (options, URLs, durations, a TTL above --max-ttl, ...)
  3    unavailable: no node reachable; `acquire`, `elect`: the nodes could not decide (down, slow,
       quarantined); `inspect`: undecided; `leader`: too few nodes answered to tell
  75   `acquire`: busy, another owner holds the lock; `elect`: another leader holds it (after -n,
       or all of --wait)
  113  `acquire`, `elect`: the lock (leadership) was lost while the command ran; its process group
       got SIGTERM
  128+N `acquire`, `elect`: signal N (INT, TERM, HUP) stopped the wait; nothing was held
  otherwise `acquire` and `elect` exit with the command's own code (128+N if signal N ended it,
  126 if it could not be run, 127 if it was not found)";

/// Why an invocation ended badly: its exit code and one line for stderr.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// A library error that means the input was wrong (an invalid resource name).
pub fn usage(e: LockError) -> Failure {
    Failure::new(USAGE, e.to_string())
}

/// A lock that was not granted, by what the caller does next: busy, unavailable, invalid.
pub fn not_locked(resource: &str, e: &LockError) -> Failure {
    let (code, what) = match e.class() {
        ErrorClass::Busy => (BUSY, "busy"),
        ErrorClass::Unavailable => (UNAVAILABLE, "unavailable"),
        ErrorClass::Invalid => return Failure::new(USAGE, e.to_string()),
        ErrorClass::Lost => (LOST, "lost"),
        // A class added later: not one of ours to promise a code for.
        _ => (FAILED, "failed"),
    };
    Failure::new(code, format!("could not lock {resource:?}: {what}: {e}"))
}

/// `inspect`'s code: 0 held, 1 free, 3 undecided (as `grep`: 0 found, 1 not, above that an error).
pub fn verdict(v: Verdict) -> u8 {
    match v {
        Verdict::Held => 0,
        Verdict::Free => FAILED,
        _ => UNAVAILABLE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_names_every_code() {
        for code in [FAILED, USAGE, UNAVAILABLE, BUSY, LOST] {
            assert!(HELP.contains(&format!("\n  {code} ")), "{code}");
        }
        assert!(HELP.contains(&format!("{SIGNALLED}+N")));
    }

    #[test]
    fn refusals_sort_by_class() {
        let busy = LockError::Contended {
            taken: 2,
            nodes: 3,
            local: false,
            retry_after: None,
            holder: None,
        };
        assert_eq!(not_locked("r", &busy).code, BUSY);
        let timeout = LockError::Timeout {
            attempts: 4,
            last: Some(Box::new(busy)),
        };
        assert_eq!(not_locked("r", &timeout).code, BUSY);
        let down = LockError::QuorumNotReached {
            ok: 0,
            needed: 2,
            failures: vec![],
        };
        assert_eq!(not_locked("r", &down).code, UNAVAILABLE);
        let bad = LockError::InvalidInput("ttl".into());
        assert_eq!(not_locked("r", &bad).code, USAGE);
        assert_eq!(verdict(Verdict::Held), 0);
        assert_eq!(verdict(Verdict::Free), 1);
        assert_eq!(verdict(Verdict::Undecided), 3);
    }
}
