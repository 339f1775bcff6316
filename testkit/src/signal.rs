//! Signals to processes the kit (or its user) started: SIGSTOP/SIGCONT freeze and thaw a node in place;
//! [`die_with_parent`] ties a child's life to its starter's.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Sends `sig` to `pid`; false if the process is gone.
pub fn send(pid: i32, sig: i32) -> bool {
    // SAFETY: kill(2) has no memory-safety preconditions; the pids are our own children.
    unsafe { libc::kill(pid, sig) == 0 }
}

/// Makes the child `cmd` starts get SIGKILL when the *thread* that spawns it exits
/// (`PR_SET_PDEATHSIG`), so a `kill -9` of its owner, where no destructor runs, takes it along.
///
/// Spawn from a thread that lives as long as the process (the main thread, a current-thread
/// runtime's): a child spawned from a short-lived thread (a test's, a multi-thread runtime's worker)
/// is killed when that thread exits.
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: getpid before the fork. Between fork and exec the hook calls only async-signal-safe
    // functions (prctl, getppid) and does not allocate (raw OS errors), as a forked child of a
    // multi-threaded process must.
    let parent = unsafe { libc::getpid() };
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then nobody would ever kill us. Its pid,
            // not 1: the orphan may be adopted by a subreaper (a container's init, a session manager).
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}
