//! Exit codes and the failure every subcommand returns (the list is in `app`'s doc).

pub const FAILED: u8 = 1;
pub const USAGE: u8 = 2;
pub const NO_NODE: u8 = 3;
/// `acquire`: the lock was not granted within `--wait` (`EX_TEMPFAIL`: try again later).
pub const NOT_ACQUIRED: u8 = 75;
/// `acquire`: the lock was lost while the command ran (renewal failed); the command got SIGTERM.
pub const LOST: u8 = 113;

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
pub fn usage(e: redlock_engine::LockError) -> Failure {
    Failure::new(USAGE, e.to_string())
}
