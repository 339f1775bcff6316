//! Redis Cluster node sets on the engine's own connections (one per shard master): a local 3-master
//! cluster started here, as the only node and beside standalone masters; every lock kind and its
//! hash-tag rules; waiters woken through every shard; a master killed and restarted costs only its
//! own slots; fred still carries a cluster under `Transport::Fred`. Failover and resharding under
//! load: `cluster_failover.rs`, `cluster_reshard.rs`.

use std::time::{Duration, Instant};

use crate::common::{
    attempt, beside_standalone, build, builder, engine, eventually, guarded, until_outcome,
    waited_behind,
};
use redlock_engine::{LockError, Transport};
use testkit::RedisCluster;

const TTL: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_cluster_votes_like_one_node_beside_standalone_masters() {
    let cluster = RedisCluster::start(3);
    let (standalone, node_urls) = beside_standalone(cluster.url());
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
    let (_standalone, beside) = beside_standalone(cluster.url());
    for set in [vec![cluster.url()], beside] {
        let e = engine(set, Transport::Pipeline).await;
        every_kind(&e).await;
    }
}

async fn every_kind(e: &redlock_engine::Redlock) {
    // Multi-resource: one hash tag for all, or a clear error before anything is sent.
    let both = e
        .acquire_many(&[b"{order:7}:items", b"{order:7}:payment"], TTL)
        .await
        .unwrap();
    e.release(both).await.unwrap();
    match attempt(
        e.lock_many([&b"order:8:items"[..], b"order:9:payment"]),
        TTL,
    )
    .await
    {
        Err(LockError::InvalidInput(why)) => assert!(why.contains("hash tag"), "{why}"),
        other => panic!("{other:?}"),
    }
    // Read-write: reader set and writer intent beside the lock key.
    let r1 = e.acquire_read(b"doc", TTL).await.unwrap();
    let r2 = e.acquire_read(b"doc", TTL).await.unwrap();
    assert!(attempt(e.lock(b"doc").write(), TTL).await.is_err());
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
    // Semaphore and slots: K holders, the (K+1)-th refused.
    let p1 = e.acquire_permit(b"pool", 2, TTL).await.unwrap();
    let p2 = e.acquire_permit(b"pool", 2, TTL).await.unwrap();
    assert!(e.lock(b"pool").permits(2).ttl(TTL).once().await.is_err());
    e.release(p1).await.unwrap();
    e.release(p2).await.unwrap();
    let s1 = e.acquire_slot(b"slots", 1, TTL).await.unwrap();
    e.release(s1).await.unwrap();
    // Fair: queue and tickets beside the lock key; a waiter's live key too, and the head's, read
    // by another waiter's script (not in its KEYS, in the same slot).
    let f = e.acquire_fair(b"line", TTL).await.unwrap();
    let next = tokio::spawn({
        let e = e.clone();
        async move {
            let wait = e.lock(b"line").fair().ttl(TTL);
            wait.wait_up_to(Duration::from_secs(5)).await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = e.inspect(b"line").await.unwrap();
    assert!(
        seen.nodes
            .iter()
            .all(|n| n.state.as_ref().is_ok_and(|s| s.fair_waiters == 1)),
        "{seen:?}"
    );
    e.release(f).await.unwrap();
    let g = tokio::time::timeout(Duration::from_secs(5), next)
        .await
        .expect("the queued fair waiter gets the lock")
        .unwrap()
        .unwrap();
    g.release().await.unwrap();
    // Renewed: one extend per lock per call on a cluster (no multi-slot batch).
    renewed_past_its_ttl(e, b"long", "on a cluster").await;
}

/// A lock `e` takes on `resource` (600 ms TTL, renewed every 200 ms) is still valid, renewed at least
/// twice, after 1 s. `who` names the case in a failure.
pub(crate) async fn renewed_past_its_ttl(e: &redlock_engine::Redlock, resource: &[u8], who: &str) {
    let policy = redlock_engine::RenewPolicy::default().every(Duration::from_millis(200));
    let renewed = e
        .acquire_renewed(resource, Duration::from_millis(600), policy)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(
        renewed.is_valid() && renewed.renewals() >= 2,
        "{who}: renewed past its TTL"
    );
    renewed.release().await.unwrap();
}

/// A waiter in another engine (built from `waiter`, with a 2 s retry pause), acquires `resource`
/// once `holder` releases it: only a release notification can wake it before its pause ends.
pub(crate) async fn woken_through(
    waiter: redlock_engine::Builder,
    holder: &redlock_engine::Redlock,
    resource: &str,
) {
    let waiter = waiter
        .retry(50, Duration::from_secs(2), Duration::from_millis(1))
        .build()
        .await
        .unwrap();
    let waited = waited_behind(holder, waiter, resource, TTL).await;
    assert!(
        waited < Duration::from_millis(1500),
        "{resource}: woken by the release, not by its 2 s pause: {waited:?}"
    );
}

/// A resource whose keys live in member `m`'s slots.
pub(crate) fn on_member(cluster: &RedisCluster, m: usize) -> String {
    (0..)
        .map(|i| format!("queue-{i}"))
        .find(|r| cluster.owner_of(format!("redlock:{{{r}}}").as_bytes()) == m)
        .unwrap()
}

#[tokio::test]
async fn a_waiter_hears_a_release_through_every_shard_and_with_a_member_down() {
    let mut cluster = RedisCluster::start(3);
    let holder = engine(vec![cluster.url()], Transport::Pipeline).await;
    let per_shard: Vec<String> = (0..3).map(|m| on_member(&cluster, m)).collect();
    let url = cluster.url();
    let waiter = || builder().nodes(vec![url.clone()]);
    for resource in &per_shard {
        woken_through(waiter(), &holder, resource).await;
    }
    // The first listed member down: the others still carry every live shard's notifications.
    cluster.members[0].kill9();
    for resource in &per_shard[1..] {
        woken_through(waiter(), &holder, resource).await;
    }
}

#[tokio::test]
async fn nodes_status_lists_each_shard_with_its_slots() {
    let cluster = RedisCluster::start(3);
    let e = engine(vec![cluster.url()], Transport::Pipeline).await;
    let status = e.nodes_status();
    let shards = &status[0].shards;
    assert_eq!(shards.len(), 3, "{status:?}");
    assert_eq!(shards.iter().map(|s| s.slots).sum::<usize>(), 16384);
    assert!(shards.iter().all(|s| s.status.connected && s.status.votes));
    assert!(shards.iter().all(|s| s.status.rtt.is_some()));
    assert_eq!(status[0].redirects.map(|r| r.moved), Some(0));
    let ports: Vec<String> = cluster
        .members
        .iter()
        .map(|m| format!(":{}", m.port))
        .collect();
    for shard in shards {
        assert!(
            ports.iter().any(|p| shard.status.node.ends_with(p)),
            "{}",
            shard.status.node
        );
    }
}

#[tokio::test]
async fn a_dead_master_costs_only_its_slots_and_its_restart_is_quarantined() {
    let mut cluster = RedisCluster::start(3);
    let victim = cluster.owner_of(b"redlock:{victim}");
    let other = (0..12)
        .map(|i| format!("other-{i}"))
        .find(|r| cluster.owner_of(format!("redlock:{{{r}}}").as_bytes()) != victim)
        .unwrap();

    // Quarantine off: only the dead master's slots are lost, the others vote throughout.
    let e = engine(vec![cluster.url()], Transport::Pipeline).await;
    cluster.members[victim].kill9();
    assert!(e.try_acquire(b"victim", TTL).await.is_err());
    for _ in 0..5 {
        let lock = e.try_acquire(other.as_bytes(), TTL).await.unwrap();
        e.release(lock).await.unwrap();
    }
    cluster.members[victim].restart();
    cluster.wait_ok(Duration::from_secs(20));
    assert!(
        until_outcome(&e, b"victim", true, Duration::from_secs(10)).await,
        "the restarted master serves its slots again"
    );

    // Quarantine on (max_ttl 2 s): a restarted master keeps only its own slots out for max_ttl.
    let guarded = build(guarded([cluster.url()], Duration::from_secs(2))).await;
    assert!(
        until_outcome(&guarded, b"victim", true, Duration::from_secs(10)).await,
        "votes once every master is older than max_ttl"
    );
    cluster.members[victim].kill9();
    cluster.members[victim].restart();
    let restarted = Instant::now();
    cluster.wait_ok(Duration::from_secs(20));
    for _ in 0..5 {
        let lock = guarded
            .try_acquire(other.as_bytes(), Duration::from_secs(1))
            .await;
        assert!(lock.is_ok(), "the other shards keep the vote: {lock:?}");
        guarded.release(lock.unwrap()).await.unwrap();
    }
    assert!(until_outcome(&guarded, b"victim", true, Duration::from_secs(10)).await);
    let first_grant = restarted.elapsed();
    assert!(
        first_grant >= Duration::from_millis(1800),
        "no vote from the restarted master until it is max_ttl old: first grant after {first_grant:?}"
    );
}

#[cfg(feature = "fred")]
#[tokio::test]
async fn fred_still_carries_a_cluster_for_comparison() {
    let cluster = RedisCluster::start(3);
    let e = engine(vec![cluster.url()], Transport::Fred).await;
    for i in 0..6 {
        let lock = e
            .acquire(format!("fred-{i}").as_bytes(), TTL)
            .await
            .unwrap();
        e.release(lock).await.unwrap();
    }
}
