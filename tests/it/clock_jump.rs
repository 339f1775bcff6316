//! The clock-jump guard against a real redis-server whose wall clock is stepped at runtime (the
//! `scripts/clockshim` preload, see `testkit/src/clock.rs`). The seeds' hazard: client A holds a lock
//! granted by n0-n2; n2's clock jumps forward by 10x the TTL and drops A's key; client B, which reaches
//! n2-n4, would be granted the same lock while A's is still valid.

use std::time::Duration;

use crate::common::{build, guarded, quick, skip_unless, RedisNode};
use redlock_engine::{LockError, NodeError, Redlock, RenewPolicy};
use testkit::clock::SteppableNode;

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
    build(quick(nodes.urls(), 1).clock_guard(guard)).await
}

#[tokio::test]
async fn a_node_whose_clock_jumps_forward_does_not_vote() {
    skip_unless!(ImmediateClock);
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

/// A single node under quarantine with a short maximum lifetime; `guard` as given.
async fn quarantined_engine(url: String, guard: bool) -> Redlock {
    build(guarded([url], MAX_TTL).clock_guard(guard)).await
}

const MAX_TTL: Duration = Duration::from_secs(3);
/// A TTL within `MAX_TTL`.
const SHORT: Duration = Duration::from_secs(2);

fn is_quarantined(result: &Result<redlock_engine::Lock, LockError>) -> bool {
    matches!(result, Err(LockError::QuorumNotReached { failures, .. })
        if failures.iter().all(|(_, cause)| *cause == NodeError::Quarantined))
}

#[tokio::test]
async fn a_node_whose_clock_is_behind_its_start_connects_and_waits_out_its_quarantine() {
    skip_unless!(ImmediateClock);
    let node = SteppableNode::start();
    node.step(-3_600_000);
    let info = node.cmd(&[b"INFO", b"server"]);
    assert!(info.contains("uptime_in_seconds:-"), "negative uptime");
    let e = quarantined_engine(node.url(), true).await;
    // Its age is unknown: the longest quarantine, not a handshake that fails for as long as the
    // clock stays behind.
    let first = e.try_acquire("behind", SHORT).await;
    assert!(is_quarantined(&first), "{first:?}");
    tokio::time::sleep(MAX_TTL + Duration::from_millis(200)).await;
    let lock = e
        .try_acquire("behind", SHORT)
        .await
        .expect("votes after max_ttl");
    e.release(lock).await.unwrap();
}

#[tokio::test]
async fn a_forward_step_right_after_a_restart_does_not_shorten_the_quarantine() {
    // Guard off: the quarantine must hold on its own (with the guard on, the step also silences it).
    for guard in [false, true] {
        let mut node = SteppableNode::start();
        let e = quarantined_engine(node.url(), guard).await;
        tokio::time::sleep(MAX_TTL + Duration::from_millis(1200)).await;
        let lock = e.try_acquire("r", SHORT).await.expect("old enough");
        e.release(lock).await.unwrap();
        node.restart();
        // The new process's uptime now reads an hour: trusted, it would vote at once.
        node.step(3_600_000);
        let restarted = std::time::Instant::now();
        while restarted.elapsed() < MAX_TTL - Duration::from_millis(500) {
            let lock = e.try_acquire("r", SHORT).await;
            assert!(
                lock.is_err(),
                "voted {:?} after a restart (guard {guard})",
                restarted.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut granted = false;
        for _ in 0..40 {
            if let Ok(lock) = e.try_acquire("r", SHORT).await {
                e.release(lock).await.unwrap();
                granted = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            granted,
            "votes again once max_ttl has passed (guard {guard})"
        );
    }
}

#[tokio::test]
async fn a_plain_lock_turns_invalid_when_a_node_it_needs_jumps() {
    let nodes = Nodes::start();
    let a = engine(&nodes, true).await;
    // `needs-n2` lands on n0-n2 (n3, n4 hold someone else's key); `spare` anywhere but n2. (A round
    // is decided at the third yes: only the nodes that answered by then count as holding it.)
    for node in nodes.last_two() {
        node.cmd(&[b"SET", b"redlock:{needs-n2}", b"someone", b"PX", b"60000"]);
    }
    nodes
        .stepped
        .cmd(&[b"SET", b"redlock:{spare}", b"someone", b"PX", b"60000"]);
    let needs_n2 = a.acquire("needs-n2", TTL).await.unwrap();
    let spare = a.acquire("spare", TTL).await.unwrap();
    assert!(needs_n2.is_valid() && spare.is_valid());
    nodes.stepped.step(10 * TTL.as_millis() as i64);
    // A acquires nothing more: its idle connection reads n2's clock within half a second.
    let seen = std::time::Instant::now();
    while needs_n2.is_valid() && seen.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !needs_n2.is_valid() && needs_n2.remaining().is_zero(),
        "n0 and n1 alone are no majority"
    );
    assert!(spare.is_valid(), "n2 did not grant it: still a majority");
    a.release(spare).await.unwrap();
}
