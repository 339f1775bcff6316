//! The operator's calls on the other node sets: a Redis Cluster and a Sentinel-managed master beside
//! standalone masters, a read-only ACL user (the README's inspecting ACL, exactly), a TLS-only node.

use std::time::Duration;

use crate::common::{acl, beside_standalone, skip_unless, tls_node, transports, urls, RedisNode};
use redlock_engine::{Config, LockError, LockKind, Redlock, Verdict};

const TTL: Duration = Duration::from_secs(10);

#[tokio::test]
async fn inspect_and_force_release_reach_the_key_on_a_cluster() {
    use testkit::RedisCluster;
    let cluster = RedisCluster::start(3);
    let (_standalone, node_urls) = beside_standalone(cluster.url());
    let e = crate::common::engine(node_urls.clone(), redlock_engine::Transport::Pipeline).await;
    for i in 0..6 {
        let resource = format!("c-{i}");
        let lock = e.acquire_fenced(&resource, TTL).await.unwrap();
        let seen = e.inspect(&resource).await.unwrap();
        assert_eq!(seen.verdict, Verdict::Held);
        let held = seen
            .nodes
            .iter()
            .filter(|n| {
                n.state
                    .as_ref()
                    .is_ok_and(|s| s.ours && s.kind.map(LockKind::name) == Some("fenced"))
            })
            .count();
        assert!(held >= 2, "{seen:?}");
        let forced = e.force_release(&resource).await.unwrap();
        assert_eq!(forced.answered, 3, "{forced:?}");
        let key = format!("redlock:{{{resource}}}");
        let owner = cluster.owner_of(key.as_bytes());
        assert!(!cluster.members[owner].exists(key.as_bytes()));
        assert!(cluster.members[owner].exists(format!("{key}:fence").as_bytes()));
        assert!(matches!(
            e.release(lock).await,
            Err(LockError::NotOwner | LockError::AlreadyExpired)
        ));
    }
    let status = e.nodes_status();
    assert!(status.iter().all(|s| s.connected), "{status:?}");
}

#[cfg(feature = "fred")]
#[tokio::test]
async fn inspect_reads_the_master_a_sentinel_names() {
    let set = testkit::SentinelSet::start();
    let (_standalone, node_urls) = beside_standalone(set.url());
    let e = crate::common::engine(node_urls, redlock_engine::Transport::Pipeline).await;
    let lock = e.acquire("behind-sentinel", TTL).await.unwrap();
    assert!(
        crate::common::eventually(Duration::from_secs(2), || set
            .master
            .exists(b"redlock:{behind-sentinel}"))
        .await
    );
    let seen = e.inspect("behind-sentinel").await.unwrap();
    let first = seen.nodes[0].state.as_ref().unwrap();
    assert!(
        first.held && first.ours && first.kind.map(LockKind::name) == Some("exclusive"),
        "{seen:?}"
    );
    assert!(seen.nodes[0].node.starts_with("redis-sentinel://"));
    assert_eq!(
        e.force_release("behind-sentinel").await.unwrap().answered,
        3
    );
    assert!(!set.master.exists(b"redlock:{behind-sentinel}"));
    drop(lock);
}

#[tokio::test]
async fn a_read_only_user_can_inspect_and_nothing_more() {
    let mut args = vec!["--user", "inspector", "on", ">pw"];
    args.extend(acl::inspect_user());
    let n: Vec<RedisNode> = (0..3).map(|_| RedisNode::start_with(&args)).collect();
    let writer = crate::common::engine(urls(&n), transports()[0]).await;
    let lock = writer.acquire("watched", TTL).await.unwrap();
    // A fair lock with a waiter queued behind its holder (planted: one entry and its live key).
    let fair = writer.acquire_fair("queued", TTL).await.unwrap();
    for x in &n {
        x.cmd(&[
            b"EVAL",
            b"redis.call('ZADD', KEYS[1], 9e15, 'w') \
redis.call('SET', KEYS[2] .. ':fair:l:' .. string.sub(redis.sha1hex('w'), 1, 16), '1', 'PX', 10000)",
            b"2",
            b"redlock:{queued}:fair:q",
            b"redlock:{queued}",
        ]);
    }
    for transport in transports() {
        let inspector_urls: Vec<String> = n
            .iter()
            .map(|x| format!("redis://inspector:pw@127.0.0.1:{}", x.port))
            .collect();
        let e = crate::common::engine(inspector_urls, transport).await;
        let seen = e.inspect("watched").await.unwrap();
        assert_eq!(seen.verdict, Verdict::Held, "{transport:?}: {seen:?}");
        assert!(seen
            .nodes
            .iter()
            .all(|x| x.state.as_ref().is_ok_and(|s| !s.ours)));
        let queued = e.inspect("queued").await.unwrap();
        assert!(
            queued
                .nodes
                .iter()
                .all(|x| x.state.as_ref().is_ok_and(|s| s.fair_waiters == 1)),
            "{transport:?}: {queued:?}"
        );
        // Read-only: it can neither break the lock nor take one.
        assert!(matches!(
            e.force_release("watched").await,
            Err(LockError::QuorumNotReached { ok: 0, .. })
        ));
        assert!(n.iter().all(|x| x.exists(b"redlock:{watched}")));
        assert!(e.try_acquire("other", TTL).await.is_err());
    }
    writer.release(lock).await.unwrap();
    writer.release(fair).await.unwrap();
}

#[tokio::test]
async fn an_operator_user_can_also_force_release_but_not_take_locks() {
    skip_unless!(Acl7);
    // The guide's operator: the inspecting user, plus what breaking a lock needs.
    let mut args = vec!["--user", "breaker", "on", ">pw"];
    args.extend(acl::inspect_user());
    args.extend(["&redlock:*", "+del", "+exists", "+publish"]);
    let n: Vec<RedisNode> = (0..3).map(|_| RedisNode::start_with(&args)).collect();
    let writer = crate::common::engine(urls(&n), transports()[0]).await;
    let lock = writer.acquire_fenced("broken", TTL).await.unwrap();
    let breaker_urls: Vec<String> = n
        .iter()
        .map(|x| format!("redis://breaker:pw@127.0.0.1:{}", x.port))
        .collect();
    let e = crate::common::engine(breaker_urls, transports()[0]).await;
    let forced = e.force_release("broken").await.unwrap();
    assert_eq!(forced.answered, 3, "{forced:?}");
    assert!(n
        .iter()
        .all(|x| !x.exists(b"redlock:{broken}") && x.exists(b"redlock:{broken}:fence")));
    assert!(
        e.try_acquire("broken", TTL).await.is_err(),
        "no +set: no lock"
    );
    assert!(matches!(
        writer.release(lock).await,
        Err(LockError::AlreadyExpired)
    ));
    // A fair lock: its holder's place ends (the live key's DEL, the queue read for a waiter to
    // wake) with these rights, and the lock is free again at once.
    let fair = writer.acquire_fair("broken-fair", TTL).await.unwrap();
    let forced = e.force_release("broken-fair").await.unwrap();
    assert_eq!((forced.answered, forced.deleted_on), (3, 3), "{forced:?}");
    let again = writer.acquire_fair("broken-fair", TTL).await.unwrap();
    writer.release(again).await.unwrap();
    drop(fair);
}

#[tokio::test]
async fn inspect_over_tls() {
    skip_unless!(Tls);
    let (node, ca, _dir) = tls_node();
    for transport in transports() {
        let e = Redlock::new(Config {
            tls_ca_file: Some(ca.clone()),
            transport,
            ..crate::common::fresh_config(vec![format!("rediss://127.0.0.1:{}", node.port)])
        })
        .await
        .unwrap();
        let lock = e.acquire("over-tls", TTL).await.unwrap();
        let seen = e.inspect("over-tls").await.unwrap();
        assert_eq!(seen.verdict, Verdict::Held, "{transport:?}");
        assert!(seen.nodes[0].state.as_ref().unwrap().ours);
        assert!(e.nodes_status()[0].node.starts_with("rediss://"));
        e.release(lock).await.unwrap();
    }
}
