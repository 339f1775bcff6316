//! The registry of this engine's waiters parked between rounds, by key: what a release that grants
//! the next holder in its own round (`super::successors`, which has the protocol and its argument)
//! looks up, and each waiter's state in that exchange.

use std::collections::HashMap;
use std::sync::{Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;

use crate::algo::value::LockValue;
use crate::lock::Lock;
use crate::protocol::spec::Target;

/// This engine's parked waiters, by key.
#[derive(Default)]
pub(crate) struct Successors(pub(super) Mutex<HashMap<Bytes, Vec<Weak<Parked>>>>);

/// One parked waiter: what a release needs to name it, and where the answer goes.
pub(crate) struct Parked {
    pub(super) target: Target,
    pub(super) value: LockValue,
    /// Its place in the kind's order (the fair lock's ticket): the lowest parked one is named.
    pub(super) rank: u64,
    pub(super) ttl: Duration,
    pub(super) state: Mutex<State>,
    pub(super) notify: Notify,
}

pub(super) enum State {
    /// In a round of its own, or about to be: not to be named.
    Busy,
    /// Between rounds.
    Parked,
    /// Named by a release whose replies are not in yet.
    Claimed,
    /// The release's answer, not yet taken.
    Answered(Handed),
    /// The waiter is gone.
    Gone,
}

/// What a release's claim came to.
pub(crate) enum Handed {
    /// Granted on a majority: the waiter holds this lock (boxed: the other answers are empty).
    Lock(Box<Lock>),
    /// Granted somewhere, or maybe (a node did not answer), but not on a majority: the waiter
    /// attempts at once (its round wins, or releases what it holds).
    TryNow,
    /// Granted nowhere that answered, and no node failed (the head is another waiter, whom the
    /// nodes woke): the waiter goes on waiting, no round needed.
    Stay,
}

pub(super) fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
