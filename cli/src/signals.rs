//! The signals `acquire` handles itself instead of dying with the lock held: SIGINT (Ctrl-C),
//! SIGTERM (a service manager) and SIGHUP (the terminal closed). Installed before anything is taken,
//! so one that arrives at any point after is seen: while waiting it stops the wait cleanly, while
//! the command runs it is passed on to the command's group.
//!
//! Job control, once the command runs ([`Signals::job_control`]): the command's group is not the
//! terminal's, so Ctrl-Z (SIGTSTP) reaches only `redlock`; it stops the command's group, then
//! itself, and passes the SIGCONT of `fg`/`bg` on. Without this the command would run on while a
//! stopped `redlock` renews nothing.

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::exit::{Failure, FAILED};

pub struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
    /// SIGTSTP and SIGCONT, once the command runs (while waiting, Ctrl-Z stops `redlock` as usual).
    job: Option<(Signal, Signal)>,
}

fn on(kind: SignalKind) -> Result<Signal, Failure> {
    signal(kind).map_err(|e| Failure::new(FAILED, format!("cannot handle signals: {e}")))
}

impl Signals {
    pub fn install() -> Result<Self, Failure> {
        Ok(Self {
            int: on(SignalKind::interrupt())?,
            term: on(SignalKind::terminate())?,
            hup: on(SignalKind::hangup())?,
            job: None,
        })
    }

    /// Handles SIGTSTP and SIGCONT from now on (for the rest of the process: tokio keeps a handler
    /// once installed).
    pub fn job_control(&mut self) -> Result<(), Failure> {
        let tstp = on(SignalKind::from_raw(libc::SIGTSTP))?;
        let cont = on(SignalKind::from_raw(libc::SIGCONT))?;
        self.job = Some((tstp, cont));
        Ok(())
    }

    /// The next of them to arrive, as its number.
    pub async fn recv(&mut self) -> i32 {
        let job = async {
            match &mut self.job {
                Some((tstp, cont)) => tokio::select! {
                    _ = tstp.recv() => libc::SIGTSTP,
                    _ = cont.recv() => libc::SIGCONT,
                },
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
            sig = job => sig,
        }
    }
}

/// Stops this process as SIGTSTP's default action would have (SIGSTOP cannot be caught).
pub fn stop_self() {
    // SAFETY: raise(3) has no memory-safety preconditions.
    unsafe {
        libc::raise(libc::SIGSTOP);
    }
}
