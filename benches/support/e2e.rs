//! What the end-to-end benches share (`benches/e2e.rs`, `benches/label.rs`): the lock TTL and the
//! node deadline, criterion's settings and the runtime, an engine connected to every node before
//! anything is measured, and one lock cycle.

use std::time::Duration;

use criterion::Criterion;
use redlock_engine::{Builder, Redlock, Wait};
use tokio::runtime::Runtime;

/// Lock TTL for every benchmark: long enough that no lock expires mid-measurement.
pub const TTL: Duration = Duration::from_secs(10);
/// Per-node reply deadline. The default (5 % of the TTL, capped to 50 ms) is a production policy; on the
/// 2-core machines these benches run on, the Redis nodes, the bench and whatever else runs share the cores,
/// and a scheduling stall past 50 ms would abort the whole run with `QuorumNotReached`. The deadline only
/// arms a timer, so a longer one changes nothing measured while every reply arrives in time.
pub const NODE_TIMEOUT: Duration = Duration::from_secs(1);

/// The end-to-end targets share two cores with the Redis nodes: short measurements, few samples.
pub fn criterion() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

/// A current-thread runtime, as a latency-minded client would run: the numbers measure the engine
/// rather than cross-thread wake-ups.
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The engine `builder` makes, with [`NODE_TIMEOUT`] and the quarantine off (the bench's nodes are
/// fresh: with it on they would not vote for `max_ttl`), once it is connected to all of its `nodes`
/// nodes (`what` names it if not).
pub fn connected(rt: &Runtime, builder: Builder, nodes: usize, what: &str) -> Redlock {
    rt.block_on(async {
        let engine = builder
            .node_timeout(NODE_TIMEOUT)
            .quarantine(false)
            .build()
            .await
            .expect("engine builds");
        assert_eq!(
            engine.connected_nodes(),
            nodes,
            "{what}: every node must be connected before measuring"
        );
        engine
    })
}

/// One lock cycle: acquire `resource`, release it. Panics on any error: an error here is a bug or a broken
/// node, and its timing would be meaningless.
pub async fn cycle(engine: &Redlock, resource: &[u8]) {
    let lock = engine
        .lock(resource)
        .ttl(TTL)
        .wait(Wait::Configured)
        .await
        .expect("acquire")
        .into_lock();
    engine.release(lock).await.expect("release");
}
