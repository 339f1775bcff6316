//! The engine: [`Redlock`] (the handle callers hold) over [`core::Core`] (what every round works on).
//!
//! - `start`: what [`Redlock::new`] does with the catalog of kinds it is handed — validation,
//!   connecting, the handshake's script list.
//! - `core`: [`core::Core`] — nodes, settings, admission, local queues, metrics, release re-sender,
//!   the watchdog's schedule; input validation and what every round needs before its fan-out.
//! - `wait`: the one wait loop every kind's acquire runs — rounds, pauses cut short by release
//!   notifications, when the wait ends — over a kind's `Waiter` hooks.
//! - `acquire`: the exclusive family's acquire and waiter — local queue, attempts, waiter marks,
//!   taking over a locally handed-off lock; `attempt`: one round and its release-on-failure (a lost
//!   take-over's step back).
//! - `release`: release (with local hand-off) and extend, for every kind.
//! - `successors`: a release that grants the next holder in its own round (a kind with a
//!   `Successor`, the fair lock): this engine's waiters park between rounds in `parked`, the
//!   registry a release looks them up in.
//! - `takeover`: the cross-process hand-off's engine side — when a waiter attempts as a named
//!   take-over (queued by its wait's start), when a release reserves the key for the first waiter
//!   elsewhere.
//! - `fanout`: the one fan-out — send to every node, decide as soon as the majority is won or lost.
//! - `admission`: admission control — at most `max_in_flight` rounds on the nodes, the rest wait (FIFO).
//! - `release_retry`: releases are not dropped — re-sent in the background where they did not land.
//! - `waitq`: the in-process FIFO queue per resource and bounded local hand-off (cohorting); a leaf,
//!   generic over what it hands off.
//! - `signals`: one task per engine sampling the nodes' links: node down/up, quarantine in/out,
//!   clock jumps as events; the nodes and background-release gauges.
//! - `inspect`: [`Redlock::inspect`] and the wait-for-every-node fan-out the operator's calls share;
//!   `force`: [`Redlock::force_release`]; `status`: [`Redlock::nodes_status`]; `report`: the public
//!   types these return.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::LockError;
use crate::lock::Lock;

pub(crate) mod acquire;
pub(crate) mod admission;
mod attempt;
mod busy;
pub(crate) mod core;
pub(crate) mod fanout;
mod force;
pub(crate) mod gates;
pub(crate) mod holds;
pub(crate) mod inspect;
pub(crate) mod parked;
pub(crate) mod release;
pub(crate) mod release_retry;
pub(crate) mod report;
pub(crate) mod shutdown;
mod signals;
mod start;
mod status;
pub(crate) mod successors;
pub(crate) mod takeover;
pub(crate) mod wait;
pub(crate) mod waitq;

/// A Redlock engine over a fixed set of independent Redis masters. Cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct Redlock {
    core: Arc<core::Core>,
}

impl Redlock {
    /// An engine over `core` (see `start`).
    pub(crate) fn from_core(core: Arc<core::Core>) -> Self {
        Self { core }
    }

    /// What every round works on.
    pub(crate) fn core(&self) -> &Arc<core::Core> {
        &self.core
    }

    /// Number of nodes in the set.
    pub fn node_count(&self) -> usize {
        self.core.nodes().len()
    }

    /// The smoothed round-trip time to each node (configuration order), as this engine measures it on
    /// its own connections: `None` before the first reply, and for nodes carried by fred. The default
    /// node deadline follows these (see [`crate::Config::node_timeout`]).
    pub fn rtt_estimates(&self) -> Vec<Option<Duration>> {
        self.core.nodes().iter().map(|n| n.rtt_smoothed()).collect()
    }

    /// Number of nodes whose connection is up right now.
    pub fn connected_nodes(&self) -> usize {
        self.core
            .nodes()
            .iter()
            .filter(|n| n.is_connected())
            .count()
    }

    /// Releases `lock` on every node with its owner-checked release script.
    ///
    /// # Errors
    /// [`LockError::NotOwner`] if another owner's value sits at the key (our lock had expired and was
    /// taken); [`LockError::AlreadyExpired`] if the keys were already gone; [`LockError::QuorumNotReached`]
    /// if too many nodes failed to answer (copies that did not land are re-sent in the background until
    /// the keys' TTL); [`LockError::Overloaded`] if the round could not even start within one TTL (only
    /// with a majority of nodes frozen and their queues full; the release is then sent in the
    /// background).
    ///
    /// With the local queue on and another task of this process waiting for the resource, the lock may
    /// instead be handed to that task (see [`crate::Config::max_local_handoffs`]); this then returns `Ok` without
    /// a round trip.
    pub async fn release(&self, lock: Lock) -> Result<(), LockError> {
        self.core.release(lock).await
    }

    /// Extends `lock` to `ttl` from now, on every node, with its owner-checked extend script.
    ///
    /// The extension counts only if a majority confirmed before the lock's current validity ended. On
    /// success `valid_until` becomes `start + ttl - drift`, measured from this call's start. On failure it
    /// can only move earlier (a partial extend with a shorter TTL may have shortened some keys).
    ///
    /// # Errors
    /// [`LockError::AlreadyExpired`] if the validity had already ended (nothing is sent) or the keys were
    /// gone; [`LockError::NotOwner`] if another owner holds the resource; [`LockError::QuorumNotReached`];
    /// [`LockError::ValidityExpired`] if the confirmations came too late to leave any validity;
    /// [`LockError::InvalidInput`] for a bad `ttl`.
    pub async fn extend(&self, lock: &mut Lock, ttl: Duration) -> Result<(), LockError> {
        self.core.extend(lock, ttl).await
    }
}

impl fmt::Debug for Redlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redlock")
            .field("nodes", &self.core.settings().nodes)
            .field("transport", &self.core.settings().transport)
            .finish_non_exhaustive()
    }
}
