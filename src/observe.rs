//! Observability: `tracing` events for every round (node outcomes, never the lock value) and `metrics`
//! counters/histograms through the `metrics` facade.
//!
//! Zero cost when nothing listens: `tracing` macros are a cached per-callsite check when no subscriber
//! is interested, and metric handles are registered once when the engine is built — with no recorder
//! installed they are no-op handles, so recording is a branch. Install the recorder before building the
//! engine. Names:
//! - `redlock_rounds_total{op, outcome}` — op: acquire | release | extend | renew | fence;
//!   outcome: won | lost.
//! - `redlock_round_seconds{op}` — duration of a round, from sending to the decision.
//! - `redlock_retries_total` — acquire attempts after the first.
//! - `redlock_node_failures_total{node, cause}` — cause: timeout | disconnected | error | quarantined.
//! - `redlock_admission_waits_total{outcome}` and `redlock_admission_wait_seconds` — rounds that had
//!   to wait for admission control (outcome: admitted | overloaded). Recorded only on that slow path,
//!   so they are looked up by name there instead of registered up front.
//! - `redlock_release_retries_total{outcome}` — background re-sends of releases that did not reach a
//!   node (outcome: sent | done | expired).
//! - `redlock_locks_held{engine}` (gauge) — locks the engine holds: `Lock` values alive, guards
//!   and renewed locks included (released or dropped: gone).
//! - `redlock_locks_lost_total{cause}` — renewed locks declared lost (cause: expired | taken | gone
//!   | unreachable), each also a warn event (`crate::watchdog::entry`).
//! - `redlock_guard_drop_releases_total` — guards dropped without an awaited release (released in
//!   the background).
//! - `redlock_nodes_connected{engine}`, `redlock_nodes_voting{engine}`,
//!   `redlock_background_releases_pending{engine}` (gauges) — sampled every 250 ms with the node
//!   events (`crate::engine::signals`).
//!
//! The gauges carry `engine`, the engine's tag in hex (the first bytes of every lock value it draws,
//! as `inspect` shows its locks; not a secret): two engines in one process report apart, where one
//! gauge would hold whichever wrote last. Counters are summed over the engines of a process.

use std::time::Duration;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use metrics::{counter, gauge, histogram, Counter, Gauge, Histogram};

use crate::algo::quorum::Tally;
use crate::error::NodeError;
use crate::protocol::cmd::Cmd;

/// Shards of [`LiveLocks`]' registry: locks granted and dropped on many threads at once rarely
/// meet on one mutex.
const SHARDS: usize = 16;

/// An engine's live locks: their count behind its `redlock_locks_held{engine}`, and each one's
/// release, for [`crate::Redlock::shutdown`] to send.
#[derive(Debug)]
pub(crate) struct LiveLocks {
    count: AtomicI64,
    gauge: Gauge,
    next: std::sync::atomic::AtomicU64,
    releases: [std::sync::Mutex<std::collections::HashMap<u64, Cmd>>; SHARDS],
    /// Set by the engine's shutdown: its locks' keys are being released, none is valid any more.
    closed: std::sync::atomic::AtomicBool,
}

impl LiveLocks {
    fn new(gauge: Gauge) -> Self {
        Self {
            count: AtomicI64::new(0),
            gauge,
            next: std::sync::atomic::AtomicU64::new(0),
            releases: Default::default(),
            closed: Default::default(),
        }
    }

    /// The engine shuts down: every one of its locks is no longer valid (see [`Held::closed`]).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    fn shard(&self, id: u64) -> std::sync::MutexGuard<'_, std::collections::HashMap<u64, Cmd>> {
        // A poisoned shard only means a panic mid-insert of a plain map; keep going.
        let shard = &self.releases[id as usize % SHARDS];
        shard.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The release of every lock alive now.
    pub(crate) fn releases(&self) -> Vec<Cmd> {
        let mut all = Vec::new();
        for shard in &self.releases {
            let shard = shard.lock().unwrap_or_else(|p| p.into_inner());
            all.extend(shard.values().cloned());
        }
        all
    }
}

/// A lock alive (a field of every `Lock`): counted in its engine's `redlock_locks_held` (the count
/// is kept here and the gauge set to it, so the gauge is right whatever the recorder does with
/// increments) and its release registered, from the grant to the drop.
#[derive(Debug)]
pub(crate) struct Held {
    live: Arc<LiveLocks>,
    id: u64,
}

impl Held {
    /// Registers a lock whose owner-checked release is `release`.
    pub(crate) fn new(live: &Arc<LiveLocks>, release: Cmd) -> Self {
        let id = live.next.fetch_add(1, Ordering::Relaxed);
        live.shard(id).insert(id, release);
        let now = live.count.fetch_add(1, Ordering::Relaxed) + 1;
        live.gauge.set(now as f64);
        Self {
            live: live.clone(),
            id,
        }
    }
}

impl Held {
    /// Whether the lock's engine was shut down (its keys released by the shutdown).
    pub(crate) fn closed(&self) -> bool {
        self.live.closed.load(Ordering::Acquire)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.live.shard(self.id).remove(&self.id);
        let now = self.live.count.fetch_sub(1, Ordering::Relaxed) - 1;
        self.live.gauge.set(now as f64);
    }
}

/// One engine's gauges, labeled with its tag (see the module doc).
#[derive(Debug)]
pub(crate) struct Gauges {
    pub(crate) nodes_connected: Gauge,
    pub(crate) nodes_voting: Gauge,
    pub(crate) releases_pending: Gauge,
    pub(crate) held: Arc<LiveLocks>,
}

/// What a round was for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    Acquire,
    Release,
    Extend,
    Renew,
    Fence,
    /// Asking the nodes whether a lock is still held (`is_held`).
    Check,
}

const OPS: [&str; 6] = ["acquire", "release", "extend", "renew", "fence", "check"];
const CAUSES: [&str; 4] = ["timeout", "disconnected", "error", "quarantined"];

/// The engine's metric handles, registered once.
#[derive(Debug)]
pub(crate) struct Metrics {
    won: [Counter; 6],
    lost: [Counter; 6],
    seconds: [Histogram; 6],
    retries: Counter,
    /// Per node, per cause.
    node_failures: Vec<[Counter; 4]>,
    pub(crate) gauges: Gauges,
}

impl Metrics {
    /// The handles of an engine over `nodes` nodes, its gauges labeled `engine` (its tag in hex).
    pub(crate) fn new(nodes: usize, engine: &str) -> Self {
        let engine = engine.to_string();
        let gauges = Gauges {
            nodes_connected: gauge!("redlock_nodes_connected", "engine" => engine.clone()),
            nodes_voting: gauge!("redlock_nodes_voting", "engine" => engine.clone()),
            releases_pending: gauge!("redlock_background_releases_pending", "engine" => engine.clone()),
            held: Arc::new(LiveLocks::new(
                gauge!("redlock_locks_held", "engine" => engine),
            )),
        };
        let per_op = |outcome: &'static str| {
            OPS.map(|op| counter!("redlock_rounds_total", "op" => op, "outcome" => outcome))
        };
        Self {
            won: per_op("won"),
            lost: per_op("lost"),
            seconds: OPS.map(|op| histogram!("redlock_round_seconds", "op" => op)),
            retries: counter!("redlock_retries_total"),
            node_failures: (0..nodes)
                .map(|node| {
                    CAUSES.map(|cause| {
                        counter!("redlock_node_failures_total", "node" => node.to_string(), "cause" => cause)
                    })
                })
                .collect(),
            gauges,
        }
    }

    /// Records one decided round: its outcome, duration and each failed node's cause, and emits a
    /// `tracing` debug event with the counts.
    pub(crate) fn round(&self, op: Op, tally: &Tally, took: Duration) {
        let i = op as usize;
        if tally.won() {
            &self.won[i]
        } else {
            &self.lost[i]
        }
        .increment(1);
        self.seconds[i].record(took.as_secs_f64());
        for (node, cause) in &tally.failures {
            let c = match cause {
                NodeError::Timeout => 0,
                NodeError::Disconnected | NodeError::ConnectionLost | NodeError::Connect(_) => 1,
                NodeError::Quarantined => 3,
                _ => 2,
            };
            if let Some(counters) = self.node_failures.get(*node) {
                counters[c].increment(1);
            }
        }
        tracing::debug!(
            op = OPS[i],
            won = tally.won(),
            yes = tally.yes,
            taken = tally.taken,
            gone = tally.gone,
            failures = ?tally.failures,
            took_us = took.as_micros() as u64,
            "redlock round"
        );
    }

    pub(crate) fn retry(&self) {
        self.retries.increment(1);
    }
}

/// A round waited `waited` for admission and got in.
pub(crate) fn admitted_after(waited: Duration) {
    counter!("redlock_admission_waits_total", "outcome" => "admitted").increment(1);
    histogram!("redlock_admission_wait_seconds").record(waited.as_secs_f64());
}

/// A round gave up waiting for admission after `waited`.
pub(crate) fn overloaded(waited: Duration) {
    counter!("redlock_admission_waits_total", "outcome" => "overloaded").increment(1);
    histogram!("redlock_admission_wait_seconds").record(waited.as_secs_f64());
    tracing::debug!(
        waited_us = waited.as_micros() as u64,
        "redlock round not admitted: overloaded"
    );
}

/// A release re-send step (see `release_retry`): `sent`, `done` or `expired`.
pub(crate) fn release_retry(outcome: &'static str) {
    counter!("redlock_release_retries_total", "outcome" => outcome).increment(1);
}
