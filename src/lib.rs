#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

//! # Layout
//! Folders by role, in layers that point one way (bottom up: `algo`, `error`, `addr` < `protocol`,
//! `observe` < `transport`, `config` < `engine`, `lock`, `watchdog` < `kinds` < `builder`, `raw`;
//! `scripts/layers`, checked with no import circle through two folders by `scripts/check-layout`).
//! `ARCHITECTURE.md` at the repository root walks through them.
//! - `algo/`: the algorithm in plain Rust, no I/O — `quorum` (the vote tally and early decision),
//!   `verdict` (a lost round's tally as the caller's error), `timing` (validity = TTL − elapsed −
//!   drift, node deadlines), `retry` (the random pause, the retries' time budget), `rtt` (a node's
//!   round-trip estimate, as TCP keeps one), `quarantine` (no vote from a node younger than
//!   `max_ttl`; its tests in `quarantine_tests`), `reply` (a node's answer as the algorithm reads
//!   it), `clock` (the clock-jump rule on a node's `TIME`
//!   readings, each node's `ClockWatch`, and the `JumpLog` a plain lock checks), `keys` (`prefix{resource}`: a lock's keys share one
//!   Cluster hash slot), `value` (the lock value: the engine's tag, a kind byte, 128 random bits — a
//!   bearer secret never printed).
//! - `engine/`: [`Redlock`] (in `engine/mod.rs`: release, extend; `start`: construction) over `core`
//!   (the one struct every round works on — nodes, settings, admission, local queues, metrics, release
//!   re-sender, the watchdog's schedule); `acquire` (the attempt loop every kind shares), `release`
//!   (release with local hand-off, and extend), `fanout` (the one fan-out: send to every node, decide
//!   as soon as the majority is won or lost), `admission` (at most `max_in_flight` rounds on the nodes,
//!   the rest wait FIFO), `release_retry` (releases re-sent in the background where they did not
//!   land), `waitq` (the in-process FIFO queue per resource and bounded local hand-off; a leaf,
//!   generic over what it hands off), `gates` (local gates: at most K of the engine's tasks attempt
//!   at once, for kinds that ask); the operator's calls — `inspect` ([`Redlock::inspect`], and the
//!   every-node fan-out they share), `force` ([`Redlock::force_release`]), `status`
//!   ([`Redlock::nodes_status`]), `report` ([`Inspection`], [`NodeStatus`] and the other types they
//!   return). The engine never names a kind: it reads a lock's `Spec` and the `Catalog` of kinds
//!   that [`Redlock::new`] hands it.
//! - `protocol/`: what is sent and how an answer reads, no I/O — `cmd` (a `Cmd`: one operation on
//!   one node, its `Script`, keys, arguments), `spec` (a kind as data: `Spec`, `Kind`, `Target`,
//!   its extra keys, the public [`LockKind`]), `catalog` (the list of kinds as the engine gets it,
//!   and every mapping derived from it), `scripts` (the single-key kinds' shared scripts),
//!   `operator` (inspect and forced release, keys by suffix), `server` (what a handshake learns of a
//!   server, and the `Profile` each connection renders operations with: the per-node command seam),
//!   `native` (Valkey 9's `DELIFEQ` and `SET ... IFEQ ... GET` for the shared release and extend,
//!   read back as the scripts' answers, and the argument why that keeps every tally and error).
//! - `kinds/`: one file per kind of lock, holding its `Spec`, Lua scripts and public methods, and
//!   in `kinds/mod.rs` the one list of kinds (`KINDS`) and [`Redlock::new`] — `exclusive`
//!   ([`Redlock::acquire`], and its labeled form), `fenced` ([`Redlock::acquire_fenced`]), `multi`
//!   ([`Redlock::acquire_many`]), `rwlock` ([`Redlock::acquire_read`], [`Redlock::acquire_write`]),
//!   `renewed` ([`RenewedLock`], [`RenewPolicy`]), `scoped` ([`Redlock::with_lock`], [`LockContext`]),
//!   `owner` ([`LockOwner`], reentrant holds), `semaphore` ([`Redlock::acquire_permit`]: at most K
//!   holders, each on `floor(K·N/(K+1)) + 1` nodes), `fair` ([`Redlock::acquire_fair`]: arrival
//!   order across processes — tickets, a queue per node, the argument) with its waiting loop
//!   `fair_wait`; `slots` ([`Redlock::acquire_slot`]: K exclusive slot locks, the majority-quorum
//!   semaphore); `probe` (tests only: a kind that proves adding one is its file and a list line).
//! - `watchdog/`: the schedule of renewed locks (a timer heap, in `watchdog/mod.rs`), `task` (the loop
//!   renewing every due lock; a failed round is retried while validity remains), `entry` (one renewed
//!   lock's record), `round` (one renewal round — for one lock, or coalesced: one extend call per node
//!   carries up to 32 locks, each with its own tally).
//! - `transport/`: the only files that touch the network — `client` (the `NodeClient` trait, what
//!   it reports, the connect options), `transport/mod.rs` (which implementation, `connect`,
//!   `encode` as a node's profile renders), `pending` (a command's reply future); `pipeline` (the
//!   engine's own pipelined connection per node: `node` (its `NodeClient` side), `read`, `write`,
//!   `clock`, `coalesce` (releases queued back to back sent as one call), `slot` (a request's place
//!   in the queue; a native form's follow-ups)), `fred` (feature `fred`; also every Cluster and Sentinel node set:
//!   `settings`, `identity`, `scripts`), `subscriber` (release notifications), `connect` (TCP + TLS +
//!   handshake), `resp` (command encoding), `bounded` (reply framing with depth and size bounds, so a
//!   hostile node cannot abort the process or exhaust its memory; its tests in `bounded_tests`),
//!   `test_scripts` (two scripts for the transport's own tests; fred's tests in `fred/tests`).
//! - `lock`: [`Lock`], what acquire returns; its fields are private, its rules behind methods.
//! - [`config`], [`builder`]: every knob with its default; validation into typed errors.
//! - [`error`]: [`LockError`] and [`NodeError`].
//! - `observe`: `tracing` events and `metrics` handles for every round (zero cost when nothing listens).
//! - `addr`: node URL parsing — standalone (`redis://`, `rediss://`), `redis-cluster://`,
//!   `redis-sentinel://`.
//! - `raw`: the lock's command stream without the algorithm (loadgen's `raw` engine, benches).

mod addr;
mod algo;
pub mod builder;
pub mod config;
mod engine;
pub mod error;
mod kinds;
mod lock;
mod observe;
mod protocol;
mod raw;
mod transport;
mod watchdog;

pub use builder::Builder;
pub use config::{Config, MAX_NODES};
pub use engine::report::{
    ForceRelease, Inspection, KeyState, NodeInspection, NodeStatus, QuarantineState, ServerInfo,
    Verdict,
};
pub use engine::Redlock;
pub use error::{LockError, NodeError};
pub use kinds::fenced::COMMIT_ROUNDS;
pub use kinds::owner::LockOwner;
pub use kinds::renewed::{RenewPolicy, RenewedLock};
pub use kinds::scoped::LockContext;
pub use kinds::semaphore::MAX_PERMITS;
pub use lock::Lock;
pub use protocol::spec::LockKind;
pub use transport::Transport;

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
