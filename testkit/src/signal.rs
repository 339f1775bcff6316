//! Signals to processes the kit (or its user) started: SIGSTOP/SIGCONT freeze and thaw a node in place.

/// Sends `sig` to `pid`; false if the process is gone.
pub fn send(pid: i32, sig: i32) -> bool {
    // SAFETY: kill(2) has no memory-safety preconditions; the pids are our own children.
    unsafe { libc::kill(pid, sig) == 0 }
}
