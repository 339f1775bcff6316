#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

//! # Layout
//! - `redlock`: [`Redlock`] — the engine: construction, release, extend, resource/TTL validation.
//! - `acquire`: the attempt loop every lock kind shares — local queue, attempts, pauses cut short by
//!   release notifications, release-on-failure, taking over a locally handed-off lock.
//! - `kind`: lock kinds (exclusive, multi-resource, read, write): which command acquires, which scripts
//!   release and extend.
//! - `multi`, `rwlock`: the multi-resource and read-write lock APIs.
//! - `renew`: [`RenewedLock`], [`RenewPolicy`] and each renewed lock's entry.
//! - `watchdog`: the per-engine task that renews every due lock (a timer heap; a failed round is
//!   retried while validity remains).
//! - `renew_round`: one renewal round — for one lock, or coalesced: one extend call per node carries
//!   up to 32 locks, each with its own tally.
//! - `scoped`: [`Redlock::with_lock`] and its [`LockContext`].
//! - `owner`: [`LockOwner`], reentrant holds scoped to an owner.
//! - `waitq`: the in-process FIFO queue per resource and bounded local hand-off (cohorting).
//! - `fanout`: the one fan-out — send to every node, decide as soon as the majority is won or lost.
//! - `round`: what every round needs before its fan-out — a turn from admission control and a node
//!   deadline fitted to the measured round trips.
//! - `admission`: admission control — at most `max_in_flight` rounds on the nodes, the rest wait (FIFO).
//! - `rtt`: a node's round-trip estimate (smoothed RTT + 4 x variation, as TCP), pure logic.
//! - `release_retry`: releases are not dropped — re-sent in the background where they did not land.
//! - `quarantine`: crashed-node quarantine — no vote from a node younger than `max_ttl`.
//! - `fence`: fencing tokens ([`Redlock::acquire_fenced`]).
//! - `quorum`: the vote tally and early decision (pure logic).
//! - `timing`: validity = TTL − elapsed − drift, node deadlines (pure logic).
//! - `retry`: the random pause between attempts (pure logic).
//! - `value`: the 20-byte random lock value (a bearer secret, never printed).
//! - `keys`: the key layout — `prefix{resource}`, so a lock's keys share one Cluster hash slot.
//! - `scripts`: every Lua script and its SHA1.
//! - [`config`], [`builder`]: every knob with its default; validation into typed errors.
//! - [`error`]: [`LockError`] and [`NodeError`].
//! - `lock`: [`Lock`], what acquire returns.
//! - `observe`: `tracing` events and `metrics` handles for every round (zero cost when nothing listens).
//! - `addr`: node URL parsing — standalone (`redis://`, `rediss://`), `redis-cluster://`,
//!   `redis-sentinel://`.
//! - `raw`: the lock's command stream without the algorithm (loadgen's `raw` engine, benches).
//! - `transport`: the only files that touch the network — the `NodeClient` trait; `transport::pipeline`
//!   (the engine's own pipelined connection per node), `transport::fred` (feature `fred`; also every
//!   Cluster and Sentinel node set),
//!   `transport::subscriber` (release notifications), `transport::connect` (TCP + handshake),
//!   `transport::resp` (command encoding), `transport::bounded` (reply framing with depth and size bounds,
//!   so a hostile node cannot abort the process or exhaust its memory).

mod acquire;
mod addr;
mod admission;
pub mod builder;
pub mod config;
pub mod error;
mod fanout;
mod fence;
mod keys;
mod kind;
mod lock;
mod multi;
mod observe;
mod owner;
mod quarantine;
mod quorum;
mod raw;
mod redlock;
mod release_retry;
mod renew;
mod renew_round;
mod retry;
mod round;
mod rtt;
mod rwlock;
mod scoped;
mod scripts;
mod timing;
mod transport;
mod value;
mod waitq;
mod watchdog;

pub use builder::Builder;
pub use config::{Config, MAX_NODES};
pub use error::{LockError, NodeError};
pub use fence::COMMIT_ROUNDS;
pub use lock::Lock;
pub use owner::LockOwner;
pub use redlock::Redlock;
pub use renew::{RenewPolicy, RenewedLock};
pub use scoped::LockContext;
pub use transport::Transport;

#[doc(hidden)]
/// Internals for the benches, `loadgen` and the tests. Not part of the supported API: may change at will.
pub mod __private {
    /// The engine's node URL parser, so loadgen reads `--nodes` exactly as the engine does.
    pub use crate::addr::{redact as redact_node_url, NodeAddr, Topology};
    pub use crate::quorum::{quorum, Decision, Tally, Vote};
    pub use crate::raw::{encode_cycle, release_all, set_all};
    pub use crate::retry::RetryPolicy;
    pub use crate::timing::Timing;
    pub use crate::value::LockValue;

    /// The engine's metric handles and per-round event (`observe`), for `benches/observe.rs`: what an
    /// acquire and a release record once their round is decided, without the network.
    #[derive(Debug)]
    pub struct Observe(crate::observe::Metrics);

    impl Observe {
        /// Registers the handles for `nodes` nodes with the current recorder, as building an engine does.
        pub fn new(nodes: usize) -> Self {
            Self(crate::observe::Metrics::new(nodes))
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
