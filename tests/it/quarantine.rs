//! Crashed-node quarantine against real restarts: a node restarted without its data does not vote
//! until it has been up for the maximum lock lifetime, so an instant restart cannot hand out a lock
//! that is still held — and without quarantine, it does.

use std::time::Duration;

use crate::common::{nodes, urls, RedisNode};
use redlock_engine::{Config, LockError, NodeError, Redlock};

/// The maximum lock lifetime in these tests (uptime is reported in whole seconds).
const MAX_LIFETIME: Duration = Duration::from_secs(2);
const TTL: Duration = Duration::from_millis(1500);

async fn engine(cluster: &[RedisNode], quarantine: bool) -> Redlock {
    engine_on(urls(cluster), Default::default(), quarantine).await
}

async fn engine_on(
    nodes: Vec<String>,
    transport: redlock_engine::Transport,
    quarantine: bool,
) -> Redlock {
    Redlock::new(Config {
        nodes,
        transport,
        quarantine,
        max_ttl: MAX_LIFETIME,
        retry_count: 0,
        local_queue: false,
        connect_timeout: Duration::from_millis(500),
        ..Default::default()
    })
    .await
    .unwrap()
}

#[test]
fn quarantine_is_on_by_default() {
    assert!(Config::default().quarantine);
}

#[tokio::test]
async fn young_nodes_do_not_vote_until_old_enough() {
    let cluster = nodes(3);
    let e = engine(&cluster, true).await;
    match e.acquire(b"young", TTL).await {
        Err(LockError::QuorumNotReached { failures, .. }) => {
            assert!(
                failures
                    .iter()
                    .all(|(_, cause)| *cause == NodeError::Quarantined),
                "{failures:?}"
            );
        }
        other => panic!("fresh nodes must not vote: {other:?}"),
    }
    assert!(
        cluster.iter().all(|n| !n.exists(b"redlock:{young}")),
        "commands still sent, and released"
    );
    tokio::time::sleep(MAX_LIFETIME + Duration::from_millis(1100)).await;
    let lock = e.acquire(b"young", TTL).await.expect("old enough now");
    e.release(lock).await.unwrap();
}

/// A node that cannot be reached fails with its connection's cause, not as restarted: a node never
/// reached, or young and then stopped, is also not voting, and the quarantine's "restarted" message
/// sends an operator looking for a restart instead of a dead server. Once it answers again it is
/// quarantined, and says so.
#[tokio::test]
async fn a_stopped_node_fails_as_unreachable_not_as_restarted() {
    async fn check_unreachable(e: &Redlock, when: &str) {
        match e.acquire(b"down", TTL).await {
            Err(LockError::QuorumNotReached { failures, .. }) => {
                let (_, cause) = &failures[0];
                assert!(
                    matches!(cause, NodeError::Connect(_) | NodeError::Disconnected),
                    "{when}: a down node must fail as unreachable: {cause:?} ({cause})"
                );
            }
            other => panic!("{when}: no node, no lock: {other:?}"),
        }
        assert!(!e.nodes_status()[0].connected, "{when}");
        let inspected = e.inspect(b"down").await.unwrap();
        let node = &inspected.nodes[0];
        match (&node.not_voting, &node.state) {
            (Some(why), _) => assert!(!matches!(why, NodeError::Quarantined), "{when}: {why:?}"),
            (None, Err(_)) => {}
            (None, Ok(state)) => panic!("{when}: a down node answered inspect: {state:?}"),
        }
    }
    // Never reached: its identity is unknown, so it would not vote even if it answered.
    let never = engine_on(vec![crate::common::dead_url()], Default::default(), true).await;
    check_unreachable(&never, "never reached").await;
    // Reached while young (quarantined by its uptime), then stopped.
    let mut cluster = nodes(1);
    let e = engine(&cluster, true).await;
    cluster[0].kill9();
    // Once the connection has seen the close (an acquire racing the kill may still count the node
    // as up, and quarantined).
    let down =
        crate::common::eventually(Duration::from_secs(2), || !e.nodes_status()[0].connected).await;
    assert!(down, "the kill is seen");
    let killed = std::time::Instant::now();
    while killed.elapsed() < Duration::from_millis(1500) {
        check_unreachable(&e, "young, then killed").await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // Back, empty: reachable now, so the quarantine is the cause.
    cluster[0].restart();
    let back =
        crate::common::eventually(Duration::from_secs(5), || e.nodes_status()[0].connected).await;
    assert!(back, "reconnected");
    match e.acquire(b"down", TTL).await {
        Err(LockError::QuorumNotReached { failures, .. }) => {
            assert_eq!(failures[0].1, NodeError::Quarantined, "{failures:?}")
        }
        other => panic!("a restarted node does not vote: {other:?}"),
    }
}

/// A holds {0, 1} (node 2 was down when it acquired); then node 2 comes back empty and node 0 restarts
/// at once without its data. B can now win {0, 2} while A's lock is still valid — unless restarted nodes
/// are quarantined.
async fn restart_scenario(quarantine: bool) -> Option<Duration> {
    let mut cluster = nodes(3);
    tokio::time::sleep(MAX_LIFETIME + Duration::from_millis(1100)).await; // old enough to vote
    let a = engine(&cluster, quarantine).await;
    cluster[2].kill9();
    let lock = a.acquire(b"split", TTL).await.expect("A wins {0, 1}");
    cluster[2].restart();
    cluster[0].restart();
    let b = engine(&cluster, quarantine).await;
    let overlap = match b.acquire(b"split", TTL).await {
        Ok(stolen) => {
            assert!(
                lock.is_valid(),
                "the test must show an overlap inside A's validity"
            );
            let overlap = lock.remaining();
            let _ = b.release(stolen).await;
            Some(overlap)
        }
        Err(_) => None,
    };
    let _ = a.release(lock).await;
    overlap
}

#[tokio::test]
async fn an_instant_restart_without_data_gives_an_overlap_without_quarantine() {
    let overlap = restart_scenario(false).await;
    assert!(
        overlap.is_some(),
        "the fault must be real: without quarantine, B overlaps A"
    );
}

#[tokio::test]
async fn quarantine_prevents_the_overlap() {
    assert_eq!(restart_scenario(true).await, None);
}

#[tokio::test]
async fn a_majority_restart_means_no_lock_until_quarantine_ends() {
    let mut cluster = nodes(3);
    tokio::time::sleep(MAX_LIFETIME + Duration::from_millis(1100)).await;
    let e = engine(&cluster, true).await;
    let lock = e.acquire(b"majority", TTL).await.unwrap();
    e.release(lock).await.unwrap();
    cluster[0].restart();
    cluster[1].restart();
    // The engine reconnects in the background; the run_id change and the uptime both quarantine them.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        e.acquire(b"majority", TTL).await.is_err(),
        "no grant while a majority is quarantined"
    );
    tokio::time::sleep(MAX_LIFETIME + Duration::from_millis(1100)).await;
    let lock = e
        .acquire(b"majority", TTL)
        .await
        .expect("granted after the quarantine");
    e.release(lock).await.unwrap();
}

#[tokio::test]
async fn one_server_under_two_names_is_rejected() {
    let cluster = nodes(1);
    let port = cluster[0].port;
    let result = Redlock::new(Config {
        nodes: vec![
            format!("redis://127.0.0.1:{port}"),
            format!("redis://localhost:{port}"),
        ],
        quarantine: true,
        ..Default::default()
    })
    .await;
    assert!(
        matches!(result, Err(LockError::InvalidConfig(ref why)) if why.contains("same Redis server")),
        "{result:?}"
    );
}

/// Milliseconds into the current wall-clock second.
fn subsec_ms() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_millis()
}

/// Redis reports `uptime_in_seconds` as the difference of two wall-clock seconds, each
/// truncated, so a node started at x.92 s says `1` at x+1.03 s. The node is restarted just before a
/// second boundary, a fresh engine (which never saw the old `run_id`) connects just after it, and the
/// node must still not vote before `MAX_LIFETIME` has passed since the restart began (the restart
/// began before the server's real start, so this bound is the weaker one: a failure is a real early
/// vote). Returns how long after the restart the first grant came.
async fn first_grant_after_a_restart_near_a_second_boundary(
    transport: redlock_engine::Transport,
) -> Duration {
    let mut node = RedisNode::start();
    for _attempt in 0..6 {
        while !(880..920).contains(&subsec_ms()) {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let restarted = std::time::Instant::now();
        node.restart();
        // Into the next second, then check the truncation really bites: `1` reported at an age
        // well below one second.
        while subsec_ms() >= 500 || restarted.elapsed() < Duration::from_millis(100) {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let info = node.cmd(&[b"INFO", b"server"]);
        let uptime = info
            .lines()
            .find_map(|l| l.trim_end().strip_prefix("uptime_in_seconds:"))
            .and_then(|v| v.parse::<u64>().ok())
            .expect("INFO server has uptime_in_seconds");
        if uptime != 1 || restarted.elapsed() >= Duration::from_millis(700) {
            continue; // the start slipped past the boundary (busy machine): try again
        }
        let e = engine_on(vec![node.url()], transport, true).await;
        let deadline = restarted + MAX_LIFETIME * 3;
        while std::time::Instant::now() < deadline {
            match e.try_acquire(b"boundary", TTL).await {
                Ok(lock) => {
                    let at = restarted.elapsed();
                    let _ = e.release(lock).await;
                    return at;
                }
                Err(LockError::QuorumNotReached { .. }) => {}
                Err(other) => panic!("unexpected error: {other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("no grant within {:?} of the restart", MAX_LIFETIME * 3);
    }
    panic!("could not place a restart just before a second boundary in 6 tries");
}

#[tokio::test]
async fn uptime_truncation_does_not_end_quarantine_early() {
    let at = first_grant_after_a_restart_near_a_second_boundary(Default::default()).await;
    assert!(
        at >= MAX_LIFETIME,
        "the restarted node voted {at:?} after its restart, before max_ttl {MAX_LIFETIME:?}"
    );
}

#[cfg(feature = "fred")]
#[tokio::test]
async fn uptime_truncation_does_not_end_quarantine_early_on_fred() {
    let at =
        first_grant_after_a_restart_near_a_second_boundary(redlock_engine::Transport::Fred).await;
    assert!(
        at >= MAX_LIFETIME,
        "the restarted node voted {at:?} after its restart, before max_ttl {MAX_LIFETIME:?}"
    );
}
