//! Redis Cluster node sets beyond plain text and the default user, as docs/guide.md claims them: a
//! 3-master cluster over TLS through `rediss-cluster://` (the shard connections on the members' TLS
//! ports, which only `CLUSTER SHARDS`'s `tls-port` names: each member also has a plain port, which
//! a TLS handshake cannot pass), and a lock user with exactly the guide's ACL for a cluster node
//! set, through a slot migration (`ASK`, then `MOVED`). A user lacking `+asking` or
//! `+cluster|shards` is refused with the server's `NOPERM` for that command, never granted a lock.

use std::time::Duration;

use crate::cluster::{on_member, renewed_past_its_ttl, woken_through};
use crate::common::{builder, migrate_every_key, skip_unless, tls_material};
use redlock_engine::{Builder, LockError, NodeError, Redlock};
use testkit::{RedisCluster, TlsFiles};

const TTL: Duration = Duration::from_secs(5);

/// Short retry pauses: a refusal is seen at once.
fn quick(b: Builder) -> Builder {
    b.retry(2, Duration::from_millis(5), Duration::from_millis(5))
        .connect_timeout(Duration::from_millis(500))
}

#[tokio::test]
async fn a_tls_cluster_locks_through_its_tls_ports() {
    skip_unless!(Tls);
    let (_dir, ca, cert, key) = tls_material();
    let cluster = RedisCluster::start_tls(
        3,
        &TlsFiles {
            ca: ca.clone(),
            cert,
            key,
        },
    );
    assert!(cluster.url().starts_with("rediss-cluster://"));
    let over_tls = || builder().nodes([cluster.url()]).tls_ca_file(ca.clone());
    let a = quick(over_tls()).build().await.unwrap();
    let b = quick(over_tls()).build().await.unwrap();
    assert_eq!(a.connected_nodes(), 1);

    let status = a.nodes_status();
    let shards = &status[0].shards;
    assert_eq!(shards.len(), 3, "{status:?}");
    assert_eq!(shards.iter().map(|s| s.slots).sum::<usize>(), 16384);
    assert!(shards.iter().all(|s| s.status.connected && s.status.votes));
    // Every shard on a member's TLS port (the plain ports would fail the TLS handshake).
    let tls_ports: Vec<String> = (0..3)
        .map(|i| format!(":{}", cluster.tls_port(i).unwrap()))
        .collect();
    for shard in shards {
        let node = &shard.status.node;
        assert!(node.starts_with("rediss://"), "{node}");
        assert!(tls_ports.iter().any(|p| node.ends_with(p)), "{node}");
    }

    // Lock, contend, extend, release in every shard.
    for m in 0..3 {
        let resource = on_member(&cluster, m);
        let key = format!("redlock:{{{resource}}}");
        let mut lock = a.acquire(resource.as_bytes(), TTL).await.unwrap();
        assert!(cluster.members[m].exists(key.as_bytes()), "{key} on {m}");
        match b.try_acquire(resource.as_bytes(), TTL).await {
            Err(LockError::Contended { .. }) => {}
            other => panic!("{resource}: {other:?}"),
        }
        a.extend(&mut lock, TTL).await.unwrap();
        a.release(lock).await.unwrap();
        assert!(!cluster.members[m].exists(key.as_bytes()), "{key} released");
    }
    // A waiter woken by a release notification heard over TLS (the listed members' TLS ports).
    woken_through(over_tls(), &a, &on_member(&cluster, 1)).await;

    // Without the test CA the certificate check fails: a clear refusal naming it, never a grant.
    let untrusted = quick(builder().nodes([cluster.url()]))
        .build()
        .await
        .unwrap();
    assert_eq!(untrusted.connected_nodes(), 0);
    let why = refusal(untrusted.try_acquire(b"untrusted", TTL).await);
    assert!(
        matches!(&why, NodeError::Connect(why)
            if why.contains("127.0.0.1") && why.to_lowercase().contains("certificate")),
        "{why:?}"
    );
}

/// Whether member `m` holds `key` of `slot`. `CLUSTER GETKEYSINSLOT`, not `EXISTS`: a target
/// importing the slot answers a plain `EXISTS` with `MOVED`.
fn holds(cluster: &RedisCluster, m: usize, slot: u16, key: &str) -> bool {
    let keys = cluster.members[m].cmd_str(&["CLUSTER", "GETKEYSINSLOT", &slot.to_string(), "100"]);
    keys.split(' ').any(|k| k == key)
}

/// The vote's failure, for a node set refusing as `QuorumNotReached` with one node.
fn refusal<T: std::fmt::Debug>(result: Result<T, LockError>) -> NodeError {
    match result {
        Err(LockError::QuorumNotReached {
            ok: 0, failures, ..
        }) if failures.len() == 1 => failures[0].1.clone(),
        other => panic!("a refusal, not {other:?}"),
    }
}

/// The guide's lock user ("Minimal ACL"): its keys, its channels, the commands a lock needs.
fn lock_user(extra: &[&'static str]) -> Vec<&'static str> {
    let mut rules = vec!["on", ">pw"];
    rules.extend(crate::common::acl::lock_user());
    rules.extend(extra);
    rules
}

/// What the guide adds for a cluster node set.
const CLUSTER_RULES: [&str; 2] = ["+cluster|shards", "+asking"];

/// `cluster.url()` as `user` (password `pw`).
fn url_as(cluster: &RedisCluster, user: &str) -> String {
    cluster.url().replacen("://", &format!("://{user}:pw@"), 1)
}

async fn engine_as(cluster: &RedisCluster, user: &str) -> Redlock {
    quick(builder().nodes([url_as(cluster, user)]))
        .build()
        .await
        .unwrap()
}

/// Locks, contends, extends, releases, renews and wakes a waiter in every shard, as `user`.
async fn basics_as(cluster: &RedisCluster, user: &str) {
    let (a, b) = (
        engine_as(cluster, user).await,
        engine_as(cluster, user).await,
    );
    assert_eq!(a.nodes_status()[0].shards.len(), 3, "{user}");
    for m in 0..3 {
        let resource = on_member(cluster, m);
        let mut lock = a
            .acquire(resource.as_bytes(), TTL)
            .await
            .unwrap_or_else(|e| panic!("{user} on {m}: {e:?}"));
        assert!(b.try_acquire(resource.as_bytes(), TTL).await.is_err());
        a.extend(&mut lock, TTL).await.unwrap();
        a.release(lock).await.unwrap();
    }
    renewed_past_its_ttl(&a, b"renewed", user).await;
    let waiter = builder().nodes([url_as(cluster, user)]);
    woken_through(waiter, &a, &on_member(cluster, 2)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guides_cluster_acl_is_enough_through_a_slot_migration() {
    skip_unless!(Acl7);
    let cluster = RedisCluster::start(3);
    cluster.acl_setuser("locker", &lock_user(&CLUSTER_RULES));
    basics_as(&cluster, "locker").await;

    let (a, b) = (
        engine_as(&cluster, "locker").await,
        engine_as(&cluster, "locker").await,
    );
    let slot = cluster.slot_of(b"m");
    let source = cluster.owner_of(b"redlock:{m}:held");
    let target = (source + 1) % 3;
    let mut held = a.acquire(b"{m}:held", TTL).await.unwrap();
    migrate_every_key(&cluster, slot, source, target);
    // The slot is migrating and its keys are on the target: every command is answered `ASK` and
    // sent there after `ASKING`.
    assert!(holds(&cluster, target, slot, "redlock:{m}:held"));
    a.extend(&mut held, TTL).await.unwrap();
    let fresh = a.acquire(b"{m}:fresh", TTL).await.unwrap();
    assert!(holds(&cluster, target, slot, "redlock:{m}:fresh"));
    assert!(!holds(&cluster, source, slot, "redlock:{m}:fresh"));
    match b.try_acquire(b"{m}:fresh", TTL).await {
        Err(LockError::Contended { .. }) => {}
        other => panic!("{other:?}"),
    }
    a.release(held).await.unwrap();
    a.release(fresh).await.unwrap();
    assert!(!holds(&cluster, target, slot, "redlock:{m}:held"));
    assert!(!holds(&cluster, target, slot, "redlock:{m}:fresh"));
    let ask = a.nodes_status()[0].redirects.unwrap().ask;
    assert!(ask >= 4, "ASK followed: {ask}");

    // The migration ends: `MOVED`, then the new map.
    tokio::task::block_in_place(|| cluster.finish_migration(slot, target));
    let lock = a.acquire(b"{m}:after", TTL).await.unwrap();
    assert!(cluster.members[target].exists(b"redlock:{m}:after"));
    a.release(lock).await.unwrap();
    assert!(a.nodes_status()[0].redirects.unwrap().moved >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_asking_a_migrating_slot_is_refused_with_noperm() {
    skip_unless!(Acl7);
    let cluster = RedisCluster::start(3);
    cluster.acl_setuser("noasking", &lock_user(&["+cluster|shards"]));
    let a = engine_as(&cluster, "noasking").await;
    let slot = cluster.slot_of(b"m");
    let source = cluster.owner_of(b"redlock:{m}:held");
    let target = (source + 1) % 3;
    let mut held = a.acquire(b"{m}:held", TTL).await.unwrap();
    migrate_every_key(&cluster, slot, source, target);
    // Every command for the slot is answered `ASK`; the target refuses the `ASKING` before it, so
    // it fails with that refusal (not followed back and forth to the hop bound), and runs nowhere.
    let noperm = |e: NodeError| {
        assert!(
            matches!(&e, NodeError::Server(why)
                if why.contains("ASKING refused") && why.contains("NOPERM") && why.contains("'asking'")),
            "{e:?}"
        )
    };
    noperm(refusal(a.extend(&mut held, TTL).await));
    noperm(refusal(a.try_acquire(b"{m}:fresh", TTL).await));
    assert!(!holds(&cluster, target, slot, "redlock:{m}:fresh"));
    assert!(!holds(&cluster, source, slot, "redlock:{m}:fresh"));
    assert!(holds(&cluster, target, slot, "redlock:{m}:held"));
    let followed = a.nodes_status()[0].redirects.unwrap();
    assert!(followed.ask >= 2 && followed.moved == 0, "{followed:?}");

    // Once the migration ends the target serves the slot without `ASKING`: the lock works again.
    tokio::task::block_in_place(|| cluster.finish_migration(slot, target));
    a.extend(&mut held, TTL).await.unwrap();
    a.release(held).await.unwrap();
    assert!(!cluster.members[target].exists(b"redlock:{m}:held"));
}

#[tokio::test]
async fn without_cluster_shards_the_slot_map_is_refused_with_noperm() {
    skip_unless!(Acl7);
    let cluster = RedisCluster::start(3);
    cluster.acl_setuser("nomap", &lock_user(&["+asking"]));
    cluster.acl_setuser("slots", &lock_user(&["+cluster|slots", "+asking"]));
    // No slot map: nothing is routed, and every vote fails with the server's refusal of both
    // commands (not a bare "not connected"); the node set is not connected.
    let e = engine_as(&cluster, "nomap").await;
    assert_eq!(e.connected_nodes(), 0);
    let noperm = |e: &NodeError| {
        assert!(
            matches!(e, NodeError::Connect(why)
                if why.contains("slot map") && why.contains("NOPERM")
                    && why.contains("'cluster|shards'") && why.contains("'cluster|slots'")),
            "{e:?}"
        )
    };
    noperm(&refusal(e.try_acquire(b"nomap", TTL).await));
    let status = e.nodes_status();
    assert!(status[0].shards.is_empty(), "{status:?}");
    noperm(
        status[0]
            .last_error
            .as_ref()
            .expect("the reason in nodes_status"),
    );
    for m in &cluster.members {
        assert!(!m.exists(b"redlock:{nomap}"));
    }
    // `+cluster|slots` instead of `+cluster|shards` reads the map too (`CLUSTER SHARDS` refused,
    // `CLUSTER SLOTS` answered).
    basics_as(&cluster, "slots").await;
}
