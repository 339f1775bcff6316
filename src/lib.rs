// The crate docs: the README's user material with intra-doc links only (the README's own links are
// relative to the repository, which docs.rs does not have). No load figures: those are the repository's
// results/README.md, each with its command.
#![doc = include_str!("../docs/crate.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

//! # Layout
//! Folders by role, in layers that point one way (bottom up: `algo`, `error`, `addr` < `protocol`,
//! `observe` < `transport`, `config` < `engine`, `lock`, `watchdog` < `kinds` < `api` < `builder`,
//! `raw`, `store` < `testing` (memory nodes for a service's tests, feature `testing`);
//! `scripts/layers`, checked by `scripts/check-layout`). The map of every module and its job is
//! `ARCHITECTURE.md` at the repository root: the one map, kept there.

mod addr;
mod algo;
mod api;
pub mod builder;
pub mod config;
mod engine;
mod env;
pub mod error;
mod kinds;
mod lock;
mod observe;
mod protocol;
mod raw;
mod settings;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod transport;
mod units;
mod watchdog;

pub use algo::keys::KeyFormat;
pub use algo::retry::Wait;
pub use api::election::campaign::Campaign;
pub use api::election::leader::Leader;
pub use api::election::leadership::Leadership;
pub use api::election::observe::Observe;
pub use api::election::Election;
pub use api::guard::LockGuard;
pub use api::owner::LockOwner;
pub use api::renewed::{RenewPolicy, RenewedLock};
pub use api::request::{LockRequest, RenewedRequest, DEFAULT_TTL};
pub use api::scoped::LockContext;
pub use builder::Builder;
pub use config::{Config, MAX_NODES};
pub use engine::report::{
    ForceRelease, Inspection, KeyState, NodeInspection, NodeStatus, QuarantineState, Redirects,
    ServerInfo, ShardStatus, Verdict,
};
pub use engine::Redlock;
pub use error::{ErrorClass, LockError, NodeError};
pub use kinds::fenced::COMMIT_ROUNDS;
pub use kinds::semaphore::MAX_PERMITS;
pub use lock::Lock;
pub use protocol::spec::LockKind;
pub use store::{FencedStore, Written};
pub use transport::Transport;
pub use units::{parse_duration, DurationError};

#[doc(hidden)]
/// Internals for the benches, `loadgen` and the tests. Not part of the supported API: may change at will.
pub mod __private {
    /// The engine's node URL parser, so loadgen reads `--nodes` exactly as the engine does.
    pub use crate::addr::{redact as redact_node_url, NodeAddr, Topology};
    pub use crate::algo::quorum::{permit_quorum, quorum, Decision, Tally, Vote};
    pub use crate::algo::retry::RetryPolicy;
    pub use crate::algo::timing::Timing;
    pub use crate::algo::value::LockValue;
    pub use crate::raw::{encode_cycle, release_all, set_all};

    /// The engine's metric handles and per-round event (`observe`), for `benches/observe.rs`: what an
    /// acquire and a release record once their round is decided, without the network.
    #[derive(Debug)]
    pub struct Observe(crate::observe::Metrics);

    impl Observe {
        /// Registers the handles for `nodes` nodes with the current recorder, as building an engine does.
        pub fn new(nodes: usize) -> Self {
            Self(crate::observe::Metrics::new(nodes, "bench"))
        }

        /// What an acquire records after its round: `Metrics::round(Op::Acquire, ..)`.
        pub fn acquire_round(&self, tally: &Tally, took: std::time::Duration) {
            self.0.round(crate::observe::Op::Acquire, tally, took);
        }

        /// What a release records after its round: `Metrics::round(Op::Release, ..)`.
        pub fn release_round(&self, tally: &Tally, took: std::time::Duration) {
            self.0.round(crate::observe::Op::Release, tally, took);
        }
    }

    /// Frames every complete reply in `buf` as the engine's reader does (bounded, default limits) and
    /// returns how many there were, or the bound broken: for `benches/decode.rs`.
    pub fn decode_replies(buf: &mut bytes::BytesMut) -> Result<usize, String> {
        let mut framer = crate::transport::bounded::Framer::new(Default::default());
        let mut n = 0;
        while let Some(reply) = framer.next_reply(buf).map_err(|e| e.to_string())? {
            std::hint::black_box(reply).ok();
            n += 1;
        }
        Ok(n)
    }

    /// `(source, sha1)` of the release and extend scripts.
    pub fn scripts() -> [(&'static str, &'static str); 2] {
        use crate::protocol::scripts::{EXTEND, RELEASE};
        [(RELEASE.source, RELEASE.sha1), (EXTEND.source, EXTEND.sha1)]
    }

    /// `(source, sha1)` of every script the engine sends (the lock kinds' and the operator's).
    pub fn all_scripts() -> Vec<(&'static str, &'static str)> {
        crate::kinds::catalog()
            .scripts()
            .iter()
            .map(|s| (s.source, s.sha1))
            .collect()
    }
}
