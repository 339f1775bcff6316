//! Past capacity the engine queues and slows down; it never reports a failure that did not happen.
//! Real redis-server nodes; no timing assertions beyond generous bounds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{builder, delayed_proxies, engine_with, nodes, urls, RedisNode};
use redlock_engine::{LockError, RenewPolicy, RenewedLock};
use testkit::Proxy;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_far_beyond_the_queue_limits_yields_no_false_error() {
    let cluster = nodes(3);
    // Connection queues of 256 requests, and 10,000 acquires started at once, each its own task.
    let e = engine_with(&cluster, |b| {
        b.max_pending(256).acquire_timeout(Duration::from_secs(120))
    })
    .await;
    let failed = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..10_000)
        .map(|i| {
            let (e, failed) = (e.clone(), failed.clone());
            tokio::spawn(async move {
                let resource = format!("burst-{i}");
                match e
                    .acquire(resource.as_bytes(), Duration::from_secs(10))
                    .await
                {
                    Ok(lock) => {
                        if let Err(err) = e.release(lock).await {
                            eprintln!("release: {err}");
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Err(err) => {
                        eprintln!("acquire: {err}");
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(
        failed.load(Ordering::Relaxed),
        0,
        "no acquire or release failed"
    );
    // A release is decided by a majority; the last node's copy may still be on its way.
    let empty = crate::common::eventually(Duration::from_secs(5), || {
        cluster.iter().all(|n| n.cmd(&[b"DBSIZE"]) == "0")
    })
    .await;
    assert!(empty, "every key released on every node");
}

#[tokio::test]
async fn overload_is_its_own_error_and_asks_no_node() {
    let cluster = nodes(3);
    // One round at a time, and every reply 80 ms away: the second caller cannot get a turn within
    // its 20 ms budget.
    let proxies = delayed_proxies(&cluster, Duration::from_millis(40)).await;
    let e = builder()
        .nodes(proxies.iter().map(Proxy::url))
        .max_in_flight(1)
        .acquire_timeout(Duration::from_millis(20))
        .node_timeout(Duration::from_millis(900))
        .build()
        .await
        .unwrap();
    let slow = {
        let e = e.clone();
        tokio::spawn(async move { e.try_acquire(b"first", Duration::from_secs(5)).await })
    };
    tokio::time::sleep(Duration::from_millis(5)).await;
    match e.try_acquire(b"second", Duration::from_secs(5)).await {
        Err(LockError::Overloaded { waited }) => assert!(waited >= Duration::from_millis(15)),
        other => panic!("expected Overloaded, got {other:?}"),
    }
    assert!(LockError::Overloaded {
        waited: Duration::ZERO
    }
    .is_retryable());
    let lock = slow.await.unwrap().expect("the admitted round is granted");
    e.release(lock).await.unwrap();
    for node in &cluster {
        assert!(
            !node.exists(b"redlock:{second}"),
            "the refused round sent nothing"
        );
    }
}

/// Three fresh nodes and a lock on `resource` for `ttl` renewed by `policy` (its engine lives as
/// long as the lock): where the renewal cases start.
async fn renewed_on_three(
    resource: &[u8],
    ttl: Duration,
    policy: RenewPolicy,
) -> (Vec<RedisNode>, RenewedLock) {
    let cluster = nodes(3);
    let e = builder().nodes(urls(&cluster)).build().await.unwrap();
    let lock = e.acquire_renewed(resource, ttl, policy).await.unwrap();
    (cluster, lock)
}

/// Renewal rounds that fail because a majority is frozen are retried while validity remains; the
/// lock survives a freeze of a third of its TTL.
#[tokio::test]
async fn renewals_keep_a_lock_through_a_majority_frozen_for_a_third_of_the_ttl() {
    let ttl = Duration::from_millis(1500);
    let (cluster, lock) = renewed_on_three(b"frozen-majority", ttl, RenewPolicy::default()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster[0].freeze();
    cluster[1].freeze();
    tokio::time::sleep(ttl / 3).await;
    cluster[0].thaw();
    cluster[1].thaw();
    let before = lock.renewals();
    tokio::time::sleep(ttl).await;
    assert!(
        !lock.is_lost(),
        "a freeze shorter than the validity lost the lock"
    );
    assert!(lock.renewals() > before, "renewal went on after the thaw");
    lock.release().await.unwrap();
}

#[tokio::test]
async fn a_lock_whose_keys_are_gone_on_a_majority_is_reported_lost() {
    let every = RenewPolicy::default().every(Duration::from_millis(200));
    let (cluster, lock) = renewed_on_three(b"deleted", Duration::from_secs(3), every).await;
    cluster[0].cmd(&[b"DEL", b"redlock:{deleted}"]);
    cluster[1].cmd(&[b"DEL", b"redlock:{deleted}"]);
    let lost_at = tokio::time::timeout(Duration::from_secs(1), lock.lost()).await;
    assert!(
        lost_at.is_ok(),
        "the next renewal must see the keys gone and say so, well before the validity ends"
    );
    assert!(
        lock.remaining() > Duration::ZERO,
        "told before the validity ran out"
    );
}

/// A release whose copy is discarded on a majority (the connection killed with it queued) is sent
/// again after the reconnect; the keys go long before their TTL.
#[tokio::test]
async fn a_release_that_did_not_land_is_sent_again() {
    let cluster = nodes(3);
    // An explicit node deadline: the test must not depend on the RTT this machine measures.
    let e = engine_with(&cluster, |b| b.node_timeout(Duration::from_millis(100))).await;
    let lock = e.acquire(b"resend", Duration::from_secs(30)).await.unwrap();
    // Writes on two nodes are held back, so the release waits there ...
    for node in &cluster[..2] {
        assert_eq!(node.cmd(&[b"CLIENT", b"PAUSE", b"3000", b"WRITE"]), "OK");
    }
    let release = {
        let e = e.clone();
        tokio::spawn(async move { e.release(lock).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // ... and is thrown away with the connection, before the pause ends.
    for node in &cluster[..2] {
        node.cmd(&[b"CLIENT", b"KILL", b"TYPE", b"normal", b"SKIPME", b"yes"]);
    }
    let released = release.await.unwrap();
    assert!(
        matches!(released, Err(LockError::QuorumNotReached { .. })),
        "not confirmed: {released:?}"
    );
    assert!(
        cluster[..2].iter().all(|n| n.exists(b"redlock:{resend}")),
        "the killed copies did not run"
    );
    let gone = crate::common::eventually(Duration::from_secs(10), || {
        cluster.iter().all(|n| !n.exists(b"redlock:{resend}"))
    })
    .await;
    assert!(gone, "the release was re-sent after the reconnect");
}

#[tokio::test]
async fn rtt_estimates_and_deadlines_follow_a_slow_link() {
    let cluster: Vec<RedisNode> = nodes(3);
    let proxies = delayed_proxies(&cluster, Duration::from_millis(15)).await;
    // TTL 200 ms: the fixed default deadline would be 10 ms, below the 30 ms round trip.
    let e = builder()
        .nodes(proxies.iter().map(Proxy::url))
        .build()
        .await
        .unwrap();
    let ttl = Duration::from_millis(200);
    let mut granted = 0;
    for _ in 0..10 {
        if let Ok(lock) = e.try_acquire(b"slow-link", ttl).await {
            granted += 1;
            let _ = e.release(lock).await;
        }
    }
    assert!(
        granted >= 8,
        "granted {granted} of 10 over a 30 ms RTT with TTL 200 ms"
    );
    let rtts = e.rtt_estimates();
    for rtt in &rtts {
        let rtt = rtt.expect("measured");
        assert!(
            rtt >= Duration::from_millis(25) && rtt < Duration::from_millis(150),
            "{rtts:?}"
        );
    }
    for p in &proxies {
        p.set_delay(Duration::from_millis(40));
    }
    for _ in 0..10 {
        if let Ok(lock) = e.try_acquire(b"slow-link", ttl).await {
            let _ = e.release(lock).await;
        }
    }
    for rtt in e.rtt_estimates() {
        assert!(
            rtt.unwrap() >= Duration::from_millis(55),
            "followed the change: {rtt:?}"
        );
    }
}

/// The same kind of burst as futures of one task (`join_all`): no local contention is invented for
/// distinct keys, nothing fails.
#[tokio::test]
async fn a_burst_in_one_join_all_on_distinct_keys_has_no_false_contention() {
    let cluster = nodes(3);
    let e = engine_with(&cluster, |b| {
        b.max_pending(256).acquire_timeout(Duration::from_secs(60))
    })
    .await;
    let results = futures::future::join_all((0..5_000).map(|i| {
        let e = e.clone();
        async move {
            let resource = format!("joined-{i}");
            let lock = e
                .acquire(resource.as_bytes(), Duration::from_secs(10))
                .await?;
            e.release(lock).await
        }
    }))
    .await;
    let failed: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} failed, e.g. {:?}",
        failed.len(),
        failed.first()
    );
}
