//! The signals `acquire` handles itself instead of dying with the lock held: SIGINT (Ctrl-C),
//! SIGTERM (a service manager) and SIGHUP (the terminal closed). Installed before anything is taken,
//! so one that arrives at any point after is seen: while waiting it stops the wait cleanly, while
//! the command runs it is passed on to the command's group.

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::exit::{Failure, FAILED};

pub struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl Signals {
    pub fn install() -> Result<Self, Failure> {
        let on = |kind| {
            signal(kind).map_err(|e| Failure::new(FAILED, format!("cannot handle signals: {e}")))
        };
        Ok(Self {
            int: on(SignalKind::interrupt())?,
            term: on(SignalKind::terminate())?,
            hup: on(SignalKind::hangup())?,
        })
    }

    /// The next of them to arrive, as its number.
    pub async fn recv(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
        }
    }
}
