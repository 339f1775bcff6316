//! The engine on memory nodes (`redlock_engine::testing`, feature `testing`), where a real node is not
//! the point: contention between two engines, and the faults the nodes' hooks make — a pause past
//! the TTL, a stopped majority, a restart that loses the data (and the quarantine that sees it), a
//! clock stepped forward. Each test runs in well under a second of work, no process started.
#![cfg(feature = "testing")]

use std::future::IntoFuture;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redlock_engine::testing::MemoryNodes;
use redlock_engine::{ErrorClass, LockError, LockGuard, QuarantineState, Redlock};

/// Retries `attempt` until it is `Ok` or `limit` passes (the engine reconnects with backoff).
async fn within<T, E: std::fmt::Debug, F: IntoFuture<Output = Result<T, E>>>(
    limit: Duration,
    mut attempt: impl FnMut() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match attempt().await {
            Ok(v) => return v,
            Err(e) if tokio::time::Instant::now() > deadline => panic!("still failing: {e:?}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// Waits until every node holds `key`: an acquire returns once a majority granted it, and the
/// last node's grant may still be on its way (a fault injected before it lands would miss it).
async fn on_every_node(nodes: &MemoryNodes, key: &str) {
    within(Duration::from_secs(2), || async {
        match nodes.iter().all(|n| n.get(key).is_some()) {
            true => Ok(()),
            false => Err("not yet"),
        }
    })
    .await
}

/// `redlock` takes `resource` for `ttl` (one attempt), and every node holds its key before this
/// returns: a fault injected next then meets the lock on every node it touches.
async fn held_on_every_node(
    nodes: &MemoryNodes,
    redlock: &Redlock,
    resource: &str,
    ttl: Duration,
) -> LockGuard {
    let guard = redlock.lock(resource).ttl(ttl).once().await.unwrap();
    on_every_node(nodes, &format!("redlock:{{{resource}}}")).await;
    guard
}

/// Two engines, eight tasks each, a read-modify-write under the lock with a pause in the middle:
/// no update is lost, whichever engine (and whichever local hand-off) wins each turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_engines_contend_without_a_lost_update() {
    let nodes = MemoryNodes::start(3).await.unwrap();
    let engines = [
        nodes.redlock().await.unwrap(),
        nodes.redlock().await.unwrap(),
    ];
    let counter = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (redlock, counter) = (engines[i % 2].clone(), counter.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                let guard = redlock
                    .lock("counter")
                    .ttl(Duration::from_secs(5))
                    .wait_up_to(Duration::from_secs(20))
                    .await
                    .unwrap();
                let seen = counter.load(Ordering::SeqCst);
                tokio::task::yield_now().await;
                counter.store(seen + 1, Ordering::SeqCst);
                guard.release().await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(counter.load(Ordering::SeqCst), 160);
    // Released everywhere (what may stay is a waiter list, with its own TTL).
    within(Duration::from_secs(2), || async {
        match nodes.iter().all(|n| n.get("redlock:{counter}").is_none()) {
            true => Ok(()),
            false => Err("still held"),
        }
    })
    .await;
}

/// Every node paused (`SIGSTOP`-like) past the lock's TTL: the holder learns it lost the lock by
/// its own clock, with no node answering; the nodes expire the key meanwhile, so once they resume
/// another engine takes the lock at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_past_the_ttl_loses_the_lock() {
    let nodes = MemoryNodes::start(3).await.unwrap();
    let redlock = nodes.redlock().await.unwrap();
    let guard = held_on_every_node(&nodes, &redlock, "job", Duration::from_millis(400)).await;
    nodes.iter().for_each(|n| n.pause());
    let why = tokio::time::timeout(Duration::from_secs(2), guard.lost())
        .await
        .expect("lost completes at the end of the validity");
    assert!(matches!(why, LockError::Lost), "{why:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    nodes.iter().for_each(|n| n.resume());
    assert!(
        nodes.iter().all(|n| n.get("redlock:{job}").is_none()),
        "expired on the nodes"
    );
    let other = nodes.redlock().await.unwrap();
    let taken = other.lock("job").ttl(Duration::from_secs(5)).once().await;
    assert!(taken.is_ok(), "{:?}", taken.err());
}

/// A stopped majority refuses connections: acquires are unavailable (not busy) while it is down.
/// Started again, it has kept its keys, so the lock held across the outage is still held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_majority_is_unavailable_and_keeps_its_keys() {
    let nodes = MemoryNodes::start(3).await.unwrap();
    let redlock = nodes
        .builder()
        .node_timeout(Duration::from_millis(200))
        .build()
        .await
        .unwrap();
    let held = held_on_every_node(&nodes, &redlock, "a", Duration::from_secs(30)).await;
    let run_id = nodes.node(0).run_id();
    nodes.node(0).stop().await;
    nodes.node(1).stop().await;
    let err = redlock.lock("b").once().await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Unavailable, "{err:?}");
    nodes.node(0).start().await.unwrap();
    nodes.node(1).start().await.unwrap();
    assert_eq!(nodes.node(0).run_id(), run_id, "the same process");
    let b = within(Duration::from_secs(10), || redlock.lock("b").once()).await;
    assert!(held.is_held().await.unwrap(), "keys kept across the outage");
    b.release().await.unwrap();
    held.release().await.unwrap();
}

/// A majority restarted empty (new `run_id`, uptime 0, no keys): the lock is gone, and an engine
/// with the crashed-node quarantine on does not let those nodes vote until they are `max_ttl` old.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_without_data_loses_the_lock_and_is_quarantined() {
    let nodes = MemoryNodes::start(3).await.unwrap();
    let max_ttl = Duration::from_millis(1500);
    let guarded = nodes
        .builder()
        .quarantine(true)
        .max_ttl(max_ttl)
        .build()
        .await
        .unwrap();
    // One attempt at `resource` for 1 s.
    let once = |resource| guarded.lock(resource).ttl(Duration::from_secs(1)).once();
    // Too few voters: refused as unavailable, not busy.
    let unavailable = |refused: LockError| {
        assert_eq!(refused.class(), ErrorClass::Unavailable, "{refused:?}");
    };
    // Just started: too young to vote.
    unavailable(once("r").await.unwrap_err());
    tokio::time::sleep(max_ttl + Duration::from_millis(200)).await;
    let held = within(Duration::from_secs(5), || once("r")).await;
    drop(held);
    let old_id = nodes.node(0).run_id();
    nodes.node(0).restart_empty().await.unwrap();
    nodes.node(1).restart_empty().await.unwrap();
    assert_ne!(nodes.node(0).run_id(), old_id, "a new process");
    assert!(nodes.node(0).keys().is_empty(), "its data is gone");
    // The engine reconnects, reads the new run ids, and keeps those nodes out of every quorum.
    within(Duration::from_secs(5), || async {
        let status = guarded.nodes_status();
        let quarantined = |i: usize| {
            status[i].connected && matches!(status[i].quarantine, QuarantineState::For(_))
        };
        match quarantined(0) && quarantined(1) {
            true => Ok(()),
            false => Err(format!("{:?}", &status[..2])),
        }
    })
    .await;
    unavailable(once("s").await.unwrap_err());
}

/// Two nodes' wall clocks stepped forward: they expire keys early, so the clock-jump guard (which
/// reads each node's `TIME`) counts them out, and the holder's `lost` says the lock is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_step_on_a_majority_loses_the_lock() {
    let nodes = MemoryNodes::start(3).await.unwrap();
    let redlock = nodes.redlock().await.unwrap();
    let guard = held_on_every_node(&nodes, &redlock, "report", Duration::from_secs(30)).await;
    nodes.node(0).step_clock_forward(Duration::from_secs(10));
    nodes.node(1).step_clock_forward(Duration::from_secs(10));
    let why = tokio::time::timeout(Duration::from_secs(3), guard.lost())
        .await
        .expect("the guard hears of the jumps");
    assert!(matches!(why, LockError::Lost), "{why:?}");
    // The key lives 10 s less on those nodes, as on a real server whose clock was stepped.
    let mut conn = tokio::net::TcpStream::connect(("127.0.0.1", nodes.node(0).port()))
        .await
        .unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    conn.write_all(b"PTTL redlock:{report}\r\n").await.unwrap();
    let mut reply = [0u8; 32];
    let n = conn.read(&mut reply).await.unwrap();
    let pttl: i64 = std::str::from_utf8(&reply[1..n])
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!((15_000..=20_000).contains(&pttl), "PTTL {pttl}");
}

/// The key expired under its holder on one node only: the lock is still held (two of three); on a
/// second node too, and it is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_expired_under_the_holder_on_a_majority_lose_the_lock() {
    let nodes = MemoryNodes::start(3).await.unwrap();
    let redlock = nodes.redlock().await.unwrap();
    let guard = held_on_every_node(&nodes, &redlock, "orders:7", Duration::from_secs(30)).await;
    assert!(nodes.node(0).expire_now("redlock:{orders:7}"));
    assert!(guard.is_held().await.unwrap(), "two of three still hold it");
    assert_eq!(nodes.node(1).expire_resource("redlock:", "orders:7"), 1);
    assert!(!guard.is_held().await.unwrap(), "a majority lost it");
    let why = guard.lost().await;
    assert!(matches!(why, LockError::NotOwner), "{why:?}");
}
