//! Kinds of lock, one home each: its `Spec` (`crate::protocol::spec`: its name and code byte, which
//! command acquires, which scripts release and extend, its extra keys and what a forced release does
//! with them, how it queues locally), its scripts, and its (deprecated) `Redlock` method.
//!
//! - `exclusive`: one resource, one owner — the hot path, a plain `SET NX PX`; also its labeled
//!   form and the waiter mark.
//! - `fenced`: an exclusive lock with a fencing token.
//! - `fair/`: an exclusive lock granted in arrival order across processes (a queue per node,
//!   tickets the nodes give and a majority agrees on); a folder: its spec, scripts, waiter and
//!   a round's tally.
//! - `multi`: several resources as one lock, all or none on each node.
//! - `rwlock`: read-write locks (many readers or one writer, writers first).
//! - `semaphore`: counting semaphores, at most K holders of a permit; the one kind whose quorum is
//!   not a majority (`floor(K·N/(K+1)) + 1`, its `Spec::quorum`).
//! - `list`: the one list of kinds ([`list::catalog`]), which `Redlock::new` hands the engine.
//!
//! The engine never names a kind: it reads the `Spec` of a lock and the catalog of the list. How
//! callers take and hold them (requests, guards, renewal, scoped use, owners, slots) is
//! `crate::api`, one layer up.
//!
//! Adding a kind of lock: its file (a `Spec`, its scripts) with its `mod` line here, and its entry
//! in the list. `probe` is a test-only kind that proves it: inspect, force-release and the handshake
//! handle it with no other edit (its tests are `list_tests`, with the list; `inspect_tests` test
//! inspect's parsing against the real list).

mod base;
pub(crate) mod exclusive;
pub(crate) mod fair;
pub(crate) mod fenced;
#[cfg(test)]
mod inspect_tests;
mod list;
pub(crate) mod multi;
#[cfg(test)]
mod probe;
pub(crate) mod rwlock;
pub(crate) mod semaphore;

pub(crate) use list::catalog;
