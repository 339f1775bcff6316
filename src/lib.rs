#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

//! # Layout
//! - `redlock`: [`Redlock`] — acquire, try_acquire, release, extend: the algorithm.
//! - `fanout`: the one fan-out — send to every node, decide as soon as the majority is won or lost.
//! - `quorum`: the vote tally and early decision (pure logic).
//! - `timing`: validity = TTL − elapsed − drift, node deadlines (pure logic).
//! - `retry`: the random pause between attempts (pure logic).
//! - `value`: the 20-byte random lock value (a bearer secret, never printed).
//! - `scripts`: the owner-checked release and extend Lua scripts and their SHA1s.
//! - [`config`], [`builder`]: every knob with its default; validation into typed errors.
//! - [`error`]: [`LockError`] and [`NodeError`].
//! - `lock`: [`Lock`], what acquire returns.
//! - `addr`: `redis://` URL parsing.
//! - `transport`: the `NodeClient` trait and its implementations — `transport::pipeline` (the engine's own
//!   pipelined connection per node) and `transport::fred` (feature `fred`). Only these files touch the network.

mod acquire;
mod addr;
pub mod builder;
pub mod config;
pub mod error;
mod fanout;
mod kind;
mod lock;
mod multi;
mod owner;
mod quorum;
mod raw;
mod redlock;
mod renew;
mod retry;
mod rwlock;
mod scoped;
mod scripts;
mod timing;
mod transport;
mod value;
mod waitq;

pub use builder::Builder;
pub use config::{Config, MAX_NODES};
pub use error::{LockError, NodeError};
pub use lock::Lock;
pub use owner::LockOwner;
pub use redlock::Redlock;
pub use renew::{RenewPolicy, RenewedLock};
pub use scoped::LockContext;
pub use transport::Transport;

#[doc(hidden)]
/// Internals for the benches, `loadgen` and the tests. Not part of the supported API: may change at will.
pub mod __private {
    pub use crate::quorum::{quorum, Decision, Tally, Vote};
    pub use crate::raw::{encode_cycle, release_all, set_all};
    pub use crate::retry::RetryPolicy;
    pub use crate::timing::Timing;
    pub use crate::value::LockValue;

    /// `(source, sha1)` of the release and extend scripts.
    pub fn scripts() -> [(&'static str, &'static str); 2] {
        [
            (crate::scripts::RELEASE.source, crate::scripts::RELEASE.sha1),
            (crate::scripts::EXTEND.source, crate::scripts::EXTEND.sha1),
        ]
    }

    /// `(source, sha1)` of every script the engine sends.
    pub fn all_scripts() -> Vec<(&'static str, &'static str)> {
        crate::scripts::ALL
            .iter()
            .map(|s| (s.source, s.sha1))
            .collect()
    }
}
