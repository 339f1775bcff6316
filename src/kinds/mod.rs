//! Lock kinds, one file each: its commands, scripts and the `Redlock` methods that take it.
//!
//! - `exclusive`: one resource, one owner — the hot path, a plain `SET NX PX`; also the release and
//!   extend scripts the single-key kinds share, their coalesced extend, and the waiter mark.
//! - `fenced`: an exclusive lock with a fencing token ([`crate::Redlock::acquire_fenced`]).
//! - `fair`: an exclusive lock granted in arrival order across processes
//!   ([`crate::Redlock::acquire_fair`]: a queue per node, tickets the nodes give and a majority
//!   agrees on); its scripts are `fair_scripts`, its waiting loop is `fair_wait`.
//! - `multi`: several resources as one lock, all or none on each node.
//! - `rwlock`: read-write locks (many readers or one writer, writers first).
//! - `semaphore`: counting semaphores, at most K holders of a permit
//!   ([`crate::Redlock::acquire_permit`]); the one kind whose quorum is not a majority
//!   (`floor(K·N/(K+1)) + 1`, its `Spec::quorum`).
//! - `slots`: the slot semaphore, K exclusive locks on a majority ([`crate::Redlock::acquire_slot`]);
//!   not a kind of its own — a way of taking exclusive locks, like the three below.
//! - `renewed`: locks the watchdog keeps alive ([`crate::RenewedLock`], [`crate::RenewPolicy`]).
//! - `scoped`: acquire, run, release ([`crate::Redlock::with_lock`], [`crate::LockContext`]).
//! - `owner`: reentrant holds scoped to an owner ([`crate::LockOwner`]).
//!
//! The first six are kinds of lock on the nodes: each is a `Spec` (`crate::protocol::spec`: its
//! name and code byte, which command acquires, which scripts release and extend, its extra keys and
//! what a forced release does with them, how it queues locally), listed once in [`KINDS`]. The
//! engine never names a kind: it reads the `Spec` of a lock and the [`catalog`] of the list, which
//! `Redlock::new` (here, at the top) hands it. `slots`, `renewed`, `scoped` and `owner` are ways of
//! holding them.
//!
//! Adding a kind of lock: its file (a `Spec` and its public methods) with its `mod` line, and its
//! entry in [`KINDS`]. `probe` is a test-only kind that proves it: inspect, force-release and the
//! handshake handle it with no other edit. `list_tests` and `inspect_tests` test the catalog and
//! inspect's parsing against the real list, here above the layers they test.

use std::sync::OnceLock;

use crate::config::Config;
use crate::engine::Redlock;
use crate::error::LockError;
use crate::protocol::catalog::Catalog;
use crate::protocol::spec::Spec;

pub(crate) mod exclusive;
pub(crate) mod fair;
mod fair_replies;
mod fair_scripts;
mod fair_wait;
pub(crate) mod fenced;
pub(crate) mod guard;
#[cfg(test)]
mod inspect_tests;
#[cfg(test)]
mod list_tests;
pub(crate) mod multi;
pub(crate) mod owner;
#[cfg(test)]
mod probe;
pub(crate) mod renewed;
pub(crate) mod request;
pub(crate) mod rwlock;
pub(crate) mod scoped;
pub(crate) mod semaphore;
pub(crate) mod slots;

/// Every kind of lock the nodes can hold: the one list. Inspect's kind names, force-release's keys,
/// the handshake's scripts and the codes in lock values are all derived from it ([`catalog`]).
static KINDS: &[&Spec] = &[
    &exclusive::EXCLUSIVE,
    &fenced::FENCED,
    &multi::MULTI,
    &rwlock::READ,
    &rwlock::WRITE,
    &semaphore::SEMAPHORE,
    &fair::FAIR,
    #[cfg(test)]
    &probe::PROBE,
];

impl Redlock {
    /// Validates `config` and connects to every node concurrently.
    ///
    /// Waits at most `connect_timeout` for the first connections. An unreachable node is not an error
    /// here: it starts disconnected, votes "failed" until it comes back, and reconnects in the background.
    /// Invalid configuration (no nodes, a malformed URL, a duplicate node, a factor out of range) is, and
    /// so is a node its transport cannot serve at all ([`LockError::Node`]).
    pub async fn new(config: Config) -> Result<Self, LockError> {
        Self::start(config, catalog()).await
    }
}

/// The list of kinds as the engine receives it (built once).
pub(crate) fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::new(KINDS))
}
