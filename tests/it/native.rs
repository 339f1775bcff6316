//! Native lock commands on the servers that have them (`crate::protocol::native` in the library):
//! one lock over two Valkey 9.1.2 nodes and three nodes of the PATH's server (Redis 7.0 in the
//! default suite) sends `DELIFEQ` and `SET ... IFEQ` to the Valkey nodes and the scripts to the
//! others (`INFO commandstats`), and every node state a release or an extend can meet gives the
//! same outcome as with the scripts everywhere.

use std::time::Duration;

use crate::common::calls;
use redlock_engine::{LockError, Redlock, RenewPolicy, Transport};
use testkit::server::{self, Needs};
use testkit::{NodeSpec, RedisNode};

const TTL: Duration = Duration::from_secs(5);

/// Two Valkey nodes, then three of the PATH's server (which must not have native commands, or
/// every node would be native: then they are Debian's Redis 7.0).
fn mixed() -> Vec<RedisNode> {
    let valkey = server::binary("valkey");
    let mut nodes: Vec<RedisNode> = (0..2)
        .map(|_| RedisNode::start_spec(NodeSpec::default().on(valkey.clone())))
        .collect();
    let other = server::lacks(server::current(), Needs::Native)
        .is_none()
        .then(|| server::binary("redis7"));
    for _ in 0..3 {
        nodes.push(RedisNode::start_spec(NodeSpec {
            server: other.clone(),
            ..NodeSpec::default()
        }));
    }
    nodes
}

async fn engine(nodes: &[RedisNode], native: bool) -> Redlock {
    let mut config = crate::common::fresh_config(testkit::urls(nodes));
    config.native_commands = native;
    config.transport = Transport::Pipeline;
    config.retry_count = 0;
    Redlock::new(config).await.expect("engine builds")
}

#[tokio::test]
async fn valkey_nodes_get_native_commands_and_redis_nodes_the_scripts_in_one_lock() {
    let nodes = mixed();
    let e = engine(&nodes, true).await;
    for node in &nodes {
        node.cmd(&[b"CONFIG", b"RESETSTAT"]);
    }
    let mut lock = e.acquire(b"mixed", TTL).await.unwrap();
    e.extend(&mut lock, TTL).await.unwrap();
    e.release(lock).await.unwrap();
    // Renewal: the watchdog's extends (single and coalesced) take the same path.
    let policy = RenewPolicy::default().every(Duration::from_millis(50));
    let mut renewed = Vec::new();
    for i in 0..8 {
        let resource = format!("renewed-{i}");
        let lock = e.acquire_renewed(
            resource.as_bytes(),
            Duration::from_millis(600),
            policy.clone(),
        );
        renewed.push(lock.await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let renewals: u32 = renewed.iter().map(|l| l.renewals()).sum();
    assert!(renewals >= 8, "{renewals} renewals");
    for lock in renewed {
        lock.release().await.unwrap();
    }
    for (i, node) in nodes.iter().enumerate() {
        let (evalsha, delifeq, set) = (
            calls(node, "evalsha"),
            calls(node, "delifeq"),
            calls(node, "set"),
        );
        if i < 2 {
            assert_eq!(
                evalsha, 0,
                "Valkey node {i}: no script for release or extend"
            );
            assert!(delifeq >= 9, "Valkey node {i}: {delifeq} DELIFEQ");
            // 9 acquires, 1 extend, the renewals.
            assert!(
                set >= 10 + u64::from(renewals) / 5,
                "Valkey node {i}: {set} SET"
            );
        } else {
            assert!(evalsha >= 10, "Redis node {i}: {evalsha} EVALSHA");
            assert_eq!(delifeq, 0, "Redis node {i}");
        }
    }
}

/// What became of a lock's key on one node after it was granted there.
#[derive(Debug, Clone, Copy)]
enum State {
    Ours,
    Gone,
    Taken,
}

/// Sets the lock key `key` on each node as `states` say.
fn set_states(nodes: &[RedisNode], key: &[u8], states: &[State]) {
    for (node, state) in nodes.iter().zip(states) {
        match state {
            State::Ours => {}
            State::Gone => {
                node.cmd(&[b"DEL", key]);
            }
            State::Taken => {
                node.cmd(&[b"SET", key, b"intruder", b"PX", b"10000"]);
            }
        }
    }
}

/// An outcome without its details (failures name nodes and ports).
fn outcome(result: &Result<(), LockError>) -> String {
    match result {
        Ok(()) => "ok".into(),
        Err(LockError::QuorumNotReached { ok, needed, .. }) => format!("quorum {ok}/{needed}"),
        Err(e) => format!("{:?}", std::mem::discriminant(e)),
    }
}

/// Every outcome a release (`release`) or an extend over `states` can have: over the 3 nodes whose
/// grant the acquire counted (`Lock::held`) and every order of the replies, the tally's early
/// decision (`Tally::for_release` for a release: a gone node counts toward the goal) and
/// `owner_error`'s rule (only nodes that confirmed the lock tell why it was lost).
fn outcomes(states: &[State], release: bool) -> Vec<String> {
    let mut out = Vec::new();
    let n = states.len();
    for held in (0u32..1 << n).filter(|m| m.count_ones() == 3) {
        let mut order: Vec<usize> = (0..n).collect();
        permutations(&mut order, 0, &mut |order| {
            let (mut yes, mut against, mut taken, mut gone) = (0, 0, 0u32, 0u32);
            let mut result = None;
            for &i in order {
                match states[i] {
                    State::Ours => yes += 1,
                    State::Gone => (against, gone) = (against + 1, gone | 1 << i),
                    State::Taken => (against, taken) = (against + 1, taken | 1 << i),
                }
                let won = if release {
                    yes > 0 && yes + gone.count_ones() >= 3
                } else {
                    yes >= 3
                };
                let lost = if release {
                    taken.count_ones() > 2
                } else {
                    against > 2
                };
                if won {
                    result = Some(outcome(&Ok(())));
                } else if lost || (release && i == order[order.len() - 1]) {
                    result = Some(outcome(&Err(if taken & held != 0 {
                        LockError::NotOwner
                    } else {
                        LockError::AlreadyExpired
                    })));
                }
                if result.is_some() {
                    break;
                }
            }
            if let Some(r) = result.filter(|r| !out.contains(r)) {
                out.push(r);
            }
        });
    }
    out
}

fn permutations(v: &mut Vec<usize>, k: usize, f: &mut impl FnMut(&[usize])) {
    if k == v.len() {
        return f(v);
    }
    for i in k..v.len() {
        v.swap(k, i);
        permutations(v, k + 1, f);
        v.swap(k, i);
    }
}

#[tokio::test]
async fn every_node_state_releases_and_extends_as_with_the_scripts() {
    let nodes = mixed();
    let native = engine(&nodes, true).await;
    let scripts = engine(&nodes, false).await;
    let key = b"redlock:{states}";
    let all = [State::Ours, State::Gone, State::Taken];
    for n in 0..3usize.pow(5) {
        let states: Vec<State> = (0..5).map(|i| all[n / 3usize.pow(i) % 3]).collect();
        let mut seen = Vec::new();
        for e in [&native, &scripts] {
            let lock = e.acquire(b"states", TTL).await.unwrap();
            set_states(&nodes, key, &states);
            let released = e.release(lock).await;
            let mut lock = e.acquire(b"states-x", TTL).await.unwrap();
            set_states(&nodes, b"redlock:{states-x}", &states);
            let extended = e.extend(&mut lock, TTL).await;
            let _ = e.release(lock).await;
            seen.push((outcome(&released), outcome(&extended)));
            for node in &nodes {
                node.cmd(&[b"DEL", key, b"redlock:{states-x}"]);
            }
        }
        // An outcome may depend on which nodes confirmed the acquire and which replies came first:
        // each must be one the tally rules allow, with either rendering.
        let release = outcomes(&states, true);
        let extend = outcomes(&states, false);
        for (engine, seen) in ["native", "scripts"].iter().zip(&seen) {
            assert!(
                release.contains(&seen.0),
                "{states:?} {engine} release: {} not in {release:?}",
                seen.0
            );
            assert!(
                extend.contains(&seen.1),
                "{states:?} {engine} extend: {} not in {extend:?}",
                seen.1
            );
        }
    }
    // A key of another type reads as someone else's, natively too.
    for e in [&native, &scripts] {
        let lock = e.acquire(b"states", TTL).await.unwrap();
        for node in &nodes {
            node.cmd(&[b"DEL", key]);
            node.cmd(&[b"HSET", key, b"f", b"v"]);
        }
        let released = e.release(lock).await;
        assert!(matches!(released, Err(LockError::NotOwner)), "{released:?}");
        for node in &nodes {
            node.cmd(&[b"DEL", key]);
        }
    }
}
