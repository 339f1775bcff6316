//! One node as its handle and its tasks share it: the state behind its mutex, the pause switch,
//! and the connection ids pub/sub registers subscribers by.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::watch;

use super::state::State;

/// A node's shared part.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<State>,
    /// `true` while paused: connections stay open and read, nothing is run or answered.
    pub(crate) paused: watch::Sender<bool>,
    next_conn: AtomicU64,
}

impl Shared {
    pub(crate) fn new(port: u16) -> Self {
        Self {
            state: Mutex::new(State::new(port)),
            paused: watch::Sender::new(false),
            next_conn: AtomicU64::new(1),
        }
    }

    /// The node's state, for one command or one hook. A panic in a command (a bug here) must not
    /// take the node down for the rest of the test: the poisoned state is used as it is.
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new connection's id.
    pub(crate) fn conn_id(&self) -> u64 {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }
}
