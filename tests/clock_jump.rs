//! The clock-jump guard against a real redis-server whose wall clock is stepped at runtime (the
//! `scripts/clockshim` preload, see `tests/common/clock.rs`). The seeds' hazard: client A holds a lock
//! granted by n0-n2; n2's clock jumps forward by 10x the TTL and drops A's key; client B, which reaches
//! n2-n4, would be granted the same lock while A's is still valid.

mod common;

use std::time::Duration;

use common::clock::SteppableNode;
use common::{builder, RedisNode};
use redlock_engine::{LockError, Redlock, RenewPolicy};

const TTL: Duration = Duration::from_secs(5);
const KEY: &[u8] = b"redlock:{ledger}";

/// Five nodes; the middle one (index 2) can have its clock stepped.
struct Nodes {
    plain: Vec<RedisNode>,
    stepped: SteppableNode,
}

impl Nodes {
    fn start() -> Self {
        Self {
            plain: (0..4).map(|_| RedisNode::start()).collect(),
            stepped: SteppableNode::start(),
        }
    }

    fn urls(&self) -> Vec<String> {
        let p: Vec<String> = self.plain.iter().map(RedisNode::url).collect();
        vec![
            p[0].clone(),
            p[1].clone(),
            self.stepped.url(),
            p[2].clone(),
            p[3].clone(),
        ]
    }

    /// n3 and n4 (plain[2], plain[3]).
    fn last_two(&self) -> &[RedisNode] {
        &self.plain[2..]
    }
}

async fn engine(nodes: &Nodes, guard: bool) -> Redlock {
    builder()
        .nodes(nodes.urls())
        .clock_guard(guard)
        .retry(1, Duration::from_millis(5), Duration::from_millis(5))
        .connect_timeout(Duration::from_millis(500))
        .build()
        .await
        .expect("engine builds")
}

#[tokio::test]
async fn a_node_whose_clock_jumps_forward_does_not_vote() {
    for guard in [false, true] {
        let nodes = Nodes::start();
        let a = engine(&nodes, guard).await;
        // B has seen n2 before the jump (its connect reads the clock): the guard's one assumption.
        let b = engine(&nodes, guard).await;
        // A's lock lands on n0-n2 only: n3 and n4 hold someone else's key for now.
        for node in nodes.last_two() {
            node.cmd(&[b"SET", KEY, b"someone", b"PX", b"60000"]);
        }
        let held = a
            .acquire_renewed("ledger", TTL, RenewPolicy::default().every(TTL / 5))
            .await
            .unwrap();
        for node in nodes.last_two() {
            node.cmd(&[b"DEL", KEY]);
        }
        nodes.stepped.step(10 * TTL.as_millis() as i64);
        assert!(!nodes.stepped.exists(KEY), "the jump expired A's key on n2");
        let granted = b.try_acquire("ledger", TTL).await;
        if guard {
            assert!(
                matches!(
                    granted,
                    Err(LockError::Contended { .. }) | Err(LockError::QuorumNotReached { .. })
                ),
                "guard on: B must be refused while A holds the lock: {granted:?}"
            );
            // n2 stays silenced for max_ttl: a second try is refused too.
            let again = b.try_acquire("ledger", TTL).await;
            assert!(again.is_err(), "a jumped node voted again: {again:?}");
        } else {
            assert!(
                granted.is_ok() && !held.is_lost(),
                "guard off: the hazard is real (B granted while A's lock is valid): {granted:?}"
            );
        }
        // A learns it at its next renewal either way: n2 says gone (or is silenced), n3 and n4 gone.
        let noticed = tokio::time::timeout(TTL / 2, held.lost()).await;
        assert!(
            noticed.is_ok(),
            "A's renewed lock must report lost (guard {guard})"
        );
    }
}

#[tokio::test]
async fn a_backward_step_or_a_slow_skew_does_not_silence_a_node() {
    let nodes = Nodes::start();
    let e = engine(&nodes, true).await;
    // Only n2-n4 are free: a grant needs n2's vote.
    let blocked = &nodes.plain[..2];
    let mut taken = 0;
    for (i, step) in [-100_000i64, 5, 0].into_iter().enumerate() {
        nodes.stepped.step(step);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let resource = format!("needs-n2-{i}");
        let key = format!("redlock:{{{resource}}}");
        for node in blocked {
            node.cmd(&[b"SET", key.as_bytes(), b"someone", b"PX", b"60000"]);
        }
        let lock = e.try_acquire(resource.as_str(), TTL).await;
        assert!(lock.is_ok(), "step {step} ms: n2 must still vote: {lock:?}");
        e.release(lock.unwrap()).await.unwrap();
        taken += 1;
    }
    assert_eq!(taken, 3);
}
