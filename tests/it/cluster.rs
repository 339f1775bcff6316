//! Redis Cluster node sets (through fred): a local 3-master cluster started here, as the only node and
//! beside standalone masters; every lock kind; a master killed and restarted.
//!
//! Not asserted: whether the live masters' slots stay usable while one master is down. With fred 10
//! they do not (its cluster client resynchronises and reports itself disconnected until every master
//! answers or the cluster fails over), so a dead master costs the node set's vote until then.
#![cfg(feature = "fred")]

use std::time::{Duration, Instant};

use crate::common::{builder, engine, eventually, nodes, until_outcome, urls};
use redlock_engine::{LockError, Transport};
use testkit::RedisCluster;

const TTL: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_cluster_votes_like_one_node_beside_standalone_masters() {
    let cluster = RedisCluster::start(3);
    let standalone = nodes(2);
    let mut node_urls = vec![cluster.url()];
    node_urls.extend(urls(&standalone));
    // Transport::Pipeline for the standalone masters; the cluster goes through fred regardless.
    let a = engine(node_urls.clone(), Transport::Pipeline).await;
    let b = engine(node_urls, Transport::Pipeline).await;
    assert_eq!(a.connected_nodes(), 3);
    let mut owners = std::collections::HashSet::new();
    for i in 0..12 {
        let resource = format!("res-{i}");
        let key = format!("redlock:{{{resource}}}");
        let mut lock = a.acquire(resource.as_bytes(), TTL).await.unwrap();
        let owner = cluster.owner_of(key.as_bytes());
        owners.insert(owner);
        // A majority answered; the last SET may still be on its way.
        let everywhere = || {
            cluster.members[owner].exists(key.as_bytes())
                && standalone.iter().all(|n| n.exists(key.as_bytes()))
        };
        assert!(
            eventually(Duration::from_secs(2), everywhere).await,
            "{resource}"
        );
        match b.try_acquire(resource.as_bytes(), TTL).await {
            Err(LockError::Contended { .. }) => {}
            other => panic!("{resource}: {other:?}"),
        }
        a.extend(&mut lock, TTL).await.unwrap();
        a.release(lock).await.unwrap();
        assert!(
            eventually(Duration::from_secs(2), || !cluster.members[owner]
                .exists(key.as_bytes()))
            .await
        );
    }
    assert!(
        owners.len() >= 2,
        "12 resources spread over the masters: {owners:?}"
    );
}

#[tokio::test]
async fn every_lock_kind_keeps_its_keys_in_one_slot() {
    let cluster = RedisCluster::start(3);
    let e = engine(vec![cluster.url()], Transport::Pipeline).await;
    // Multi-resource: one hash tag for all, or a clear error before anything is sent.
    let both = e
        .acquire_many(&[b"{order:7}:items", b"{order:7}:payment"], TTL)
        .await
        .unwrap();
    e.release(both).await.unwrap();
    match e
        .lock_many([&b"order:8:items"[..], b"order:9:payment"])
        .ttl(TTL)
        .once()
        .await
        .map(redlock_engine::LockGuard::into_lock)
    {
        Err(LockError::InvalidInput(why)) => assert!(why.contains("hash tag"), "{why}"),
        other => panic!("{other:?}"),
    }
    // Read-write: reader set and writer intent beside the lock key.
    let r1 = e.acquire_read(b"doc", TTL).await.unwrap();
    let r2 = e.acquire_read(b"doc", TTL).await.unwrap();
    assert!(e
        .lock(b"doc")
        .write()
        .ttl(TTL)
        .once()
        .await
        .map(redlock_engine::LockGuard::into_lock)
        .is_err());
    e.release(r1).await.unwrap();
    e.release(r2).await.unwrap();
    let w = e.acquire_write(b"doc", TTL).await.unwrap();
    e.release(w).await.unwrap();
    // Fenced: the counter key sits in the lock's slot; tokens only grow.
    let first = e.acquire_fenced(b"ledger", TTL).await.unwrap();
    let t1 = first.fencing_token().unwrap();
    e.release(first).await.unwrap();
    let second = e.acquire_fenced(b"ledger", TTL).await.unwrap();
    assert!(second.fencing_token().unwrap() > t1);
    e.release(second).await.unwrap();
}

#[tokio::test]
async fn a_waiter_hears_a_release_through_the_cluster() {
    let cluster = RedisCluster::start(3);
    let holder = engine(vec![cluster.url()], Transport::Pipeline).await;
    // Long pauses: only a notification can wake the waiter quickly.
    let waiter = builder()
        .nodes(vec![cluster.url()])
        .retry(50, Duration::from_secs(2), Duration::from_millis(1))
        .build()
        .await
        .unwrap();
    let lock = holder.acquire(b"queue", TTL).await.unwrap();
    let wait = tokio::spawn(async move {
        let start = Instant::now();
        let lock = waiter.acquire(b"queue", TTL).await.unwrap();
        let waited = start.elapsed();
        waiter.release(lock).await.unwrap();
        waited
    });
    // Let the waiter lose its first round, mark itself and subscribe.
    tokio::time::sleep(Duration::from_millis(300)).await;
    holder.release(lock).await.unwrap();
    let waited = wait.await.unwrap();
    assert!(
        waited < Duration::from_millis(1500),
        "woken by the release, not by its 2 s pause: {waited:?}"
    );
}

#[tokio::test]
async fn a_dead_master_costs_its_slots_and_a_restart_is_quarantined() {
    let mut cluster = RedisCluster::start(3);
    let victim_key = b"redlock:{victim}";
    let victim = cluster.owner_of(victim_key);
    let other = (0..12)
        .map(|i| format!("other-{i}"))
        .find(|r| cluster.owner_of(format!("redlock:{{{r}}}").as_bytes()) != victim)
        .unwrap();

    // Quarantine off: only the dead master's slots are lost.
    let e = engine(vec![cluster.url()], Transport::Pipeline).await;
    cluster.members[victim].kill9();
    assert!(e.try_acquire(b"victim", TTL).await.is_err());
    cluster.members[victim].restart();
    cluster.wait_ok(Duration::from_secs(20));
    assert!(
        until_outcome(&e, b"victim", true, Duration::from_secs(10)).await,
        "the restarted master serves its slots again"
    );

    // Quarantine on (max_ttl 2 s): a restarted master keeps the whole set out for one max_ttl.
    let guarded = builder()
        .nodes(vec![cluster.url()])
        .quarantine(true)
        .max_ttl(Duration::from_secs(2))
        .retry(0, Duration::from_millis(5), Duration::from_millis(5))
        .build()
        .await
        .unwrap();
    assert!(
        until_outcome(&guarded, other.as_bytes(), true, Duration::from_secs(10)).await,
        "votes once every master is older than max_ttl"
    );
    cluster.members[victim].kill9();
    // The set stops voting once the drop is seen (the live masters' keys were safe meanwhile).
    assert!(
        until_outcome(&guarded, other.as_bytes(), false, Duration::from_secs(5)).await,
        "a dropped master suspends the set"
    );
    cluster.members[victim].restart();
    let restarted = Instant::now();
    cluster.wait_ok(Duration::from_secs(20));
    assert!(until_outcome(&guarded, other.as_bytes(), true, Duration::from_secs(10)).await);
    let first_grant = restarted.elapsed();
    assert!(
        first_grant >= Duration::from_millis(1800),
        "no vote until the restarted master is max_ttl old: first grant after {first_grant:?}"
    );
}
