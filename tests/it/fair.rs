//! Fair locks on real nodes: waiters in several engines (stand-ins for processes) are served in the
//! order their enqueue completed; a cancelled or dead waiter's place is freed (at once, or within one
//! TTL); a node down, a node frozen, a node restarted under quarantine; the lock behaves like a lock.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{dead_url, engine_with, fair_queued as queued, nodes, urls, RedisNode};
use redlock_engine::{Config, LockError, Redlock, RenewPolicy};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(5);

async fn engine(urls: Vec<String>) -> Redlock {
    crate::common::builder()
        .nodes(urls)
        .acquire_timeout(Duration::from_secs(20))
        .retry(10, Duration::from_millis(20), Duration::from_millis(20))
        .build()
        .await
        .unwrap()
}

/// Holds `resource` with engine 0, then starts `waiters` waiters round-robin over `engines`, each
/// once the previous one is queued on a majority (its enqueue completed), and releases. Returns the
/// order they got the lock in.
async fn order_of(
    engines: &[Redlock],
    cluster: &[&RedisNode],
    resource: &str,
    waiters: usize,
) -> Vec<usize> {
    let holder = engines[0].acquire_fair(resource, TTL).await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let majority = cluster.len() / 2 + 1;
    let mut tasks = Vec::new();
    for w in 0..waiters {
        let e = engines[w % engines.len()].clone();
        let (order, res) = (order.clone(), resource.to_string());
        tasks.push(tokio::spawn(async move {
            let lock = e.acquire_fair(&res, TTL).await.unwrap();
            order.lock().unwrap().push(w);
            tokio::time::sleep(Duration::from_millis(5)).await;
            e.release(lock).await.unwrap();
        }));
        // Queued on a majority: the holder's entry plus this waiter's and those before it.
        let queued_on_majority = crate::common::eventually(Duration::from_secs(2), || {
            cluster
                .iter()
                .filter(|n| queued(n, resource) >= w + 2)
                .count()
                >= majority
        })
        .await;
        assert!(queued_on_majority, "waiter {w} did not get queued");
    }
    engines[0].release(holder).await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    let order = order.lock().unwrap().clone();
    order
}

#[tokio::test]
async fn waiters_in_several_engines_get_it_in_arrival_order() {
    let cluster = nodes(3);
    let mut engines = Vec::new();
    for _ in 0..3 {
        engines.push(engine(urls(&cluster)).await);
    }
    let refs: Vec<&RedisNode> = cluster.iter().collect();
    let order = order_of(&engines, &refs, "order", 8).await;
    assert_eq!(order, (0..8).collect::<Vec<_>>());
    // Every queue drained (the last release returned at a majority: the last node may lag).
    let drained = || cluster.iter().all(|n| queued(n, "order") == 0);
    assert!(crate::common::eventually(Duration::from_secs(2), drained).await);
}

#[tokio::test]
async fn arrival_order_with_a_node_down_and_with_a_node_frozen() {
    let cluster = nodes(5);
    let mut list = urls(&cluster);
    list[1] = dead_url();
    let mut engines = Vec::new();
    for _ in 0..3 {
        engines.push(engine(list.clone()).await);
    }
    let up: Vec<&RedisNode> = cluster
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, n)| n)
        .collect();
    let order = order_of(&engines, &up, "down", 6).await;
    assert_eq!(order, (0..6).collect::<Vec<_>>(), "node down");

    let mut engines = Vec::new();
    for _ in 0..3 {
        engines.push(engine(urls(&cluster)).await);
    }
    cluster[4].freeze();
    let up: Vec<&RedisNode> = cluster[..4].iter().collect();
    let started = Instant::now();
    let order = order_of(&engines, &up, "frozen", 6).await;
    cluster[4].thaw();
    assert_eq!(order, (0..6).collect::<Vec<_>>(), "node frozen");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_cancelled_waiter_leaves_at_once_and_a_dead_ones_place_expires_within_a_ttl() {
    let cluster = nodes(3);
    let e = engine(urls(&cluster)).await;
    let holder = e.acquire_fair("gone", TTL).await.unwrap();
    // Cancelled: the acquire future dropped while queued.
    let cancelled =
        tokio::time::timeout(Duration::from_millis(200), e.acquire_fair("gone", TTL)).await;
    assert!(cancelled.is_err());
    assert!(
        crate::common::eventually(Duration::from_secs(1), || cluster
            .iter()
            .all(|n| queued(n, "gone") == 1))
        .await,
        "the cancelled waiter's entries were removed"
    );
    // Timed out: the same, with an error.
    let short = engine_with(&cluster, |b| b.acquire_timeout(Duration::from_millis(200))).await;
    assert!(matches!(
        short.acquire_fair("gone", TTL).await,
        Err(LockError::Timeout { .. })
    ));
    assert!(
        crate::common::eventually(Duration::from_secs(1), || cluster
            .iter()
            .all(|n| queued(n, "gone") == 1))
        .await
    );
    e.release(holder).await.unwrap();

    // Dead: a waiter ahead of everyone that never refreshes (placed by hand, ticket 1, its live key
    // with 400 ms left).
    let ttl = Duration::from_millis(400);
    let ghost_live = format!(
        "redlock:{{dead}}:fair:l:{}",
        &sha1_smol::Sha1::from(b"ghost").digest().to_string()[..16]
    );
    for n in &cluster {
        n.cmd(&[b"ZADD", b"redlock:{dead}:fair:q", b"1", b"ghost"]);
        n.cmd(&[b"SET", ghost_live.as_bytes(), b"1", b"PX", b"400"]);
    }
    let started = Instant::now();
    let lock = e
        .acquire_fair("dead", ttl)
        .await
        .expect("the dead waiter's place expires");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited < ttl + Duration::from_millis(300),
        "{waited:?}"
    );
    e.release(lock).await.unwrap();
}

#[tokio::test]
async fn a_fair_lock_extends_renews_excludes_and_reports_like_a_lock() {
    let cluster = nodes(3);
    let e = engine(urls(&cluster)).await;
    let mut lock = e.acquire_fair("like", TTL).await.unwrap();
    assert_eq!(lock.attempts(), 1, "free: granted by the enqueue round");
    assert!(
        e.try_acquire("like", TTL).await.is_err(),
        "a plain lock is excluded"
    );
    e.extend(&mut lock, Duration::from_secs(8)).await.unwrap();
    e.release(lock).await.unwrap();
    let lock = e
        .acquire_fair("like", Duration::from_millis(300))
        .await
        .unwrap();
    let renewed = e.renew(lock, RenewPolicy::default()).unwrap();
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(!renewed.is_lost());
    renewed.release().await.unwrap();
    let gone = || {
        cluster
            .iter()
            .all(|n| !n.exists(b"redlock:{like}") && queued(n, "like") == 0)
    };
    assert!(crate::common::eventually(Duration::from_secs(2), gone).await);
    assert!(matches!(
        e.acquire_fair("", TTL).await,
        Err(LockError::InvalidInput(_))
    ));
    assert!(matches!(
        e.acquire_fair("x", Duration::ZERO).await,
        Err(LockError::InvalidInput(_))
    ));
    // Without a majority of nodes, a typed error, not a hang.
    let lonely = crate::common::builder()
        .nodes(vec![cluster[0].url(), dead_url(), dead_url()])
        .acquire_timeout(Duration::from_millis(300))
        .build()
        .await
        .unwrap();
    let err = lonely.acquire_fair("x", TTL).await.unwrap_err();
    assert!(
        matches!(
            err,
            LockError::QuorumNotReached { .. } | LockError::Timeout { .. }
        ),
        "{err:?}"
    );
}

/// With quarantine on, a node restarted without its queue does not vote: order still holds on the
/// other two.
#[tokio::test]
async fn arrival_order_across_a_restart_under_quarantine() {
    let mut cluster = nodes(3);
    let max_ttl = Duration::from_secs(2);
    tokio::time::sleep(max_ttl + Duration::from_millis(1100)).await;
    let mut engines = Vec::new();
    for _ in 0..2 {
        engines.push(
            Redlock::new(Config {
                nodes: urls(&cluster),
                quarantine: true,
                max_ttl,
                acquire_timeout: Some(Duration::from_secs(20)),
                ..Default::default()
            })
            .await
            .unwrap(),
        );
    }
    let holder = engines[0].acquire_fair("restart", max_ttl).await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for w in 0..4 {
        let e = engines[w % 2].clone();
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let lock = e.acquire_fair("restart", max_ttl).await.unwrap();
            order.lock().unwrap().push(w);
            // Node 0 may still be reconnecting: the release is re-sent in the background.
            let _ = e.release(lock).await;
        }));
        assert!(
            crate::common::eventually(Duration::from_secs(2), || cluster
                .iter()
                .filter(|n| queued(n, "restart") >= w + 2)
                .count()
                >= 2)
            .await
        );
        if w == 1 {
            cluster[0].kill9();
            cluster[0].restart();
        }
    }
    engines[0].release(holder).await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3]);
}

/// A release hands the key to the queue's head. A head that died (its live key left, nobody
/// listening) holds it only until its live key expires, as long as its place: the waiter behind it
/// gets the lock then, not a whole TTL later.
#[tokio::test]
async fn a_dead_head_handed_the_key_holds_it_no_longer_than_its_place() {
    let cluster = nodes(3);
    let e = engine(urls(&cluster)).await;
    let holder = e.acquire_fair("handed", TTL).await.unwrap();
    // Ahead of everyone (ticket 1), live for 600 ms more, at an epoch of its own.
    let ghost_live = format!(
        "redlock:{{handed}}:fair:l:{}",
        &sha1_smol::Sha1::from(b"ghost").digest().to_string()[..16]
    );
    let planted = Instant::now();
    for n in &cluster {
        n.cmd(&[b"ZADD", b"redlock:{handed}:fair:q", b"1", b"ghost"]);
        n.cmd(&[b"SET", ghost_live.as_bytes(), b"7", b"PX", b"600"]);
    }
    let waiter = tokio::spawn({
        let e = e.clone();
        async move {
            let lock = e.acquire_fair("handed", TTL).await.unwrap();
            (Instant::now(), lock)
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    e.release(holder).await.unwrap();
    // The release handed the key to the dead head, on every node.
    for n in &cluster {
        assert_eq!(
            n.cmd(&[b"GET", b"redlock:{handed}"]),
            "ghost",
            "the release hands the key to the head"
        );
    }
    let (got, lock) = tokio::time::timeout(Duration::from_secs(4), waiter)
        .await
        .expect("the dead head's key outlives its place")
        .unwrap();
    // Nothing says the key expired: the waiter finds out at its keepalive, a quarter TTL (1.25 s)
    // apart. So the place (600 ms) plus up to one keepalive, well below the TTL (5 s).
    let waited = got - planted;
    assert!(
        waited >= Duration::from_millis(500) && waited < Duration::from_millis(3_000),
        "got the lock {waited:?} after the dead head's place was planted (600 ms left)"
    );
    e.release(lock).await.unwrap();
}

/// 100k waiters that died without leaving (planted as dead entries, behind a holder), and 500
/// more behind the live waiter (so the queue's last entry is dead too): no script stalls a node
/// (each drops at most 1,000 dead entries, then wakes a waiter behind them to go on), the holder's
/// release succeeds, and the live waiter gets the lock in round trips. Its pauses here are a
/// quarter TTL (1.25 s): draining by pauses alone would take 100 of them, over two minutes.
#[tokio::test]
async fn a_live_waiter_amid_100k_dead_entries_gets_the_lock_and_no_script_stalls_a_node() {
    let cluster = nodes(3);
    let slow_pauses = || async {
        crate::common::builder()
            .nodes(urls(&cluster))
            .acquire_timeout(Duration::from_secs(60))
            .retry(10, Duration::from_secs(2), Duration::ZERO)
            .build()
            .await
            .unwrap()
    };
    let (holding, waiting) = (slow_pauses().await, slow_pauses().await);
    let holder = holding.acquire_fair("drain", TTL).await.unwrap();
    let plant = |from: u32, count: u32| {
        for n in &cluster {
            n.cmd(&[
                b"EVAL",
                b"for i = 1, tonumber(ARGV[2]) do \
redis.call('ZADD', KEYS[1], 9e15 + ARGV[1] + i, 'dead' .. (ARGV[1] + i)) end",
                b"1",
                b"redlock:{drain}:fair:q",
                from.to_string().as_bytes(),
                count.to_string().as_bytes(),
            ]);
        }
    };
    plant(0, 100_000);
    let started = Instant::now();
    let waiter = tokio::spawn(async move {
        let lock = waiting.acquire_fair("drain", TTL).await.unwrap();
        let took = started.elapsed();
        waiting.release(lock).await.unwrap();
        took
    });
    let behind_all = crate::common::eventually(Duration::from_secs(3), || {
        cluster.iter().all(|n| queued(n, "drain") == 100_002)
    })
    .await;
    assert!(behind_all, "the waiter is queued behind the dead entries");
    plant(200_000, 500);
    for n in &cluster {
        // The old single-script prune took about 250 ms; one of 1,000 takes a few.
        n.cmd_str(&["CONFIG", "SET", "slowlog-log-slower-than", "100000"]);
        n.cmd_str(&["SLOWLOG", "RESET"]);
    }
    holding.release(holder).await.unwrap();
    let took = waiter.await.unwrap();
    assert!(took < Duration::from_secs(15), "took {took:?}");
    for n in &cluster {
        assert_eq!(
            n.cmd_str(&["SLOWLOG", "LEN"]),
            "0",
            "a command ran for 100 ms or more on :{}",
            n.port
        );
    }
}
