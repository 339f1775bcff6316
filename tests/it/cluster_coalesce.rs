//! Coalesced releases on a cluster shard's connection: releases of locks in many hash slots,
//! queued back to back, go out as one any-slot call per group (the keys in `ARGV`, so the server's
//! `CROSSSLOT` check of declared keys does not refuse it); a lock whose slot is migrating away, so
//! that the node no longer holds its key, answers `m` in the group and is sent again alone, where
//! its declared key follows the server's `ASK`. Every release lands, none fails falsely.

use std::time::Duration;

use crate::common::{builder, calls, migrate_every_key};
use redlock_engine::{Lock, Redlock};
use testkit::RedisCluster;

const TTL: Duration = Duration::from_secs(10);

async fn engine(cluster: &RedisCluster) -> Redlock {
    builder().nodes(vec![cluster.url()]).build().await.unwrap()
}

/// Script calls (`EVALSHA` and `EVAL`) the cluster's masters have served so far.
fn script_calls(cluster: &RedisCluster) -> u64 {
    cluster
        .members
        .iter()
        .map(|m| calls(m, "evalsha") + calls(m, "eval"))
        .sum()
}

async fn take(e: &Redlock, names: impl Iterator<Item = String>) -> Vec<Lock> {
    let mut locks = Vec::new();
    for name in names {
        locks.push(e.acquire(name.as_bytes(), TTL).await.unwrap());
    }
    locks
}

/// Releases every lock at once; each must succeed.
async fn release_all(e: &Redlock, locks: Vec<Lock>) {
    let results = futures::future::join_all(locks.into_iter().map(|l| e.release(l))).await;
    let failed: Vec<_> = results.iter().filter(|r| r.is_err()).collect();
    assert!(failed.is_empty(), "releases failed: {failed:?}");
}

// One thread: every release is queued before any connection's writer runs, so the groups do not
// depend on how busy the machine is.
#[tokio::test]
async fn releases_of_locks_in_many_slots_share_script_calls() {
    const LOCKS: usize = 240;
    let cluster = RedisCluster::start(3);
    let e = engine(&cluster).await;
    let locks = take(&e, (0..LOCKS).map(|i| format!("spread{i}"))).await;
    let slots: std::collections::HashSet<u16> = (0..LOCKS)
        .map(|i| cluster.slot_of(format!("spread{i}").as_bytes()))
        .collect();
    assert!(slots.len() > LOCKS / 2, "the locks span many slots");
    let before = script_calls(&cluster);
    release_all(&e, locks).await;
    let used = script_calls(&cluster) - before;
    // One release per lock, queued back to back on three shards' connections: in groups of up to
    // sixteen whatever their slots. One call per lock (no coalescing across slots) would be 240.
    assert!(
        used as usize * 4 <= LOCKS,
        "{used} script calls for {LOCKS} releases"
    );
    for i in 0..LOCKS {
        let key = format!("redlock:{{spread{i}}}");
        let owner = cluster.owner_of(key.as_bytes());
        assert!(!cluster.members[owner].exists(key.as_bytes()), "{key} left");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_with_keys_migrated_away_sends_those_alone_and_releases_all() {
    let cluster = RedisCluster::start(3);
    let e = engine(&cluster).await;
    let slot = cluster.slot_of(b"m");
    let source = cluster.owner_of(b"redlock:{m}:0");
    let target = (source + 1) % 3;
    // Locks in the migrating slot and locks in other slots of the same shard, released together.
    let moving: Vec<String> = (0..8).map(|i| format!("{{m}}:{i}")).collect();
    let staying: Vec<String> = (0..400)
        .map(|i| format!("stay{i}"))
        .filter(|r| cluster.owner_of(format!("redlock:{{{r}}}").as_bytes()) == source)
        .take(40)
        .collect();
    let mut locks = take(&e, moving.iter().cloned()).await;
    locks.extend(take(&e, staying.iter().cloned()).await);
    migrate_every_key(&cluster, slot, source, target);
    let (_, ask_before) = cluster.redirects_sent(source);
    // Shuffled so that groups mix keys the source holds with keys it sends on with `ASK`.
    let mut mixed = Vec::new();
    let mut staying_locks = locks.split_off(moving.len());
    while !locks.is_empty() || !staying_locks.is_empty() {
        mixed.extend(staying_locks.pop());
        mixed.extend(staying_locks.pop());
        mixed.extend(locks.pop());
    }
    release_all(&e, mixed).await;
    let (_, ask_after) = cluster.redirects_sent(source);
    assert!(ask_after > ask_before, "the source answered ASK");
    let followed = e.nodes_status()[0].redirects.unwrap_or_default();
    assert!(followed.ask > 0, "the engine followed ASK: {followed:?}");
    for r in &moving {
        let key = format!("redlock:{r}");
        for m in [source, target] {
            assert!(!cluster.members[m].exists(key.as_bytes()), "{key} on {m}");
        }
    }
    for r in &staying {
        let key = format!("redlock:{{{r}}}");
        assert!(
            !cluster.members[source].exists(key.as_bytes()),
            "{key} left"
        );
    }
    tokio::task::block_in_place(|| cluster.finish_migration(slot, target));
}
