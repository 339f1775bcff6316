//! Resharding under load: one hash slot moved between masters (`SETSLOT ... MIGRATING/IMPORTING`,
//! `MIGRATE` a few keys at a time, `SETSLOT ... NODE`) while two engines take, extend and release
//! locks in it. The servers answer `ASK` during the move and `MOVED` after it (counted from their
//! `INFO errorstats`); the engine follows both: no false failure, no lost release, no lock granted
//! twice, and the target master (already a master) is not quarantined by the move.

use std::time::Duration;

use crate::cluster_load::Load;
use crate::common::{self, build, until_outcome};
use redlock_engine::Redlock;
use testkit::RedisCluster;

const TTL: Duration = Duration::from_secs(1);

async fn guarded(cluster: &RedisCluster) -> Redlock {
    build(common::guarded([cluster.url()], Duration::from_secs(2))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_moved_under_load_loses_no_lock_and_grants_none_twice() {
    let cluster = RedisCluster::start(3);
    let (a, b) = (guarded(&cluster).await, guarded(&cluster).await);
    let source = cluster.owner_of(b"redlock:{m}:own-0");
    move_under_load(&cluster, &a, &b, (source + 1) % 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_moved_to_a_master_just_added_loses_no_lock() {
    let mut cluster = RedisCluster::start(3);
    let (a, b) = (guarded(&cluster).await, guarded(&cluster).await);
    let added = tokio::task::block_in_place(|| cluster.add_master());
    // The engines learn of it from their next map read (it serves no slot, so nothing is routed
    // to it); it votes once older than max_ttl, like any node.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let known = |e: &Redlock| e.nodes_status()[0].shards.len() == 4;
    assert!(known(&a) && known(&b), "{:?}", a.nodes_status());
    move_under_load(&cluster, &a, &b, added).await;
}

/// Moves the slot of tag `m` to member `target` while `a` and `b` lock resources in it.
async fn move_under_load(cluster: &RedisCluster, a: &Redlock, b: &Redlock, target: usize) {
    // Every resource in the slot of tag `m`.
    let own: Vec<String> = (0..6).map(|i| format!("{{m}}:own-{i}")).collect();
    let shared: Vec<String> = (0..4).map(|i| format!("{{m}}:shared-{i}")).collect();
    let slot = cluster.slot_of(b"m");
    let source = cluster.owner_of(b"redlock:{m}:own-0");
    assert!(until_outcome(a, own[0].as_bytes(), true, Duration::from_secs(10)).await);
    assert!(until_outcome(b, own[0].as_bytes(), true, Duration::from_secs(10)).await);
    let before = (
        cluster.redirects_sent(source),
        cluster.redirects_sent(target),
    );

    // Contended resources (overlap check) and one uncontended resource per worker (every round
    // must succeed: the move is no reason for a failure).
    let contended = Load::start(&[a.clone(), b.clone()], &shared, 3, TTL, true);
    let mut solo = Vec::new();
    for (i, r) in own.iter().enumerate() {
        let e = if i % 2 == 0 { a.clone() } else { b.clone() };
        solo.push(Load::start(&[e], std::slice::from_ref(r), 1, TTL, true));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let c = cluster;
    tokio::task::block_in_place(|| {
        c.begin_migration(slot, source, target);
        // A few keys at a time, with load in between: keys on both sides, ASK for the moved ones.
        let mut quiet = 0;
        while quiet < 10 {
            let moved = c.migrate_keys(slot, source, target, 2);
            quiet = if moved == 0 { quiet + 1 } else { 0 };
            std::thread::sleep(Duration::from_millis(30));
        }
        c.finish_migration(slot, target);
    });
    // After the move: the source answers MOVED until the engines' maps say otherwise.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let out = contended.stop().await;
    assert!(
        out.overlaps().is_empty(),
        "granted twice: {:?}",
        out.overlaps()
    );
    assert!(out.failures.is_empty(), "contended: {:?}", out.failures);
    let mut rounds = 0;
    for load in solo {
        let out = load.stop().await;
        assert!(
            out.failures.is_empty(),
            "false failures: {:?}",
            out.failures
        );
        rounds += out.ops;
    }
    assert!(rounds > 100, "the load ran: {rounds} rounds");
    // No lost release: nothing left on either master once every lock was released.
    for r in own.iter().chain(&shared) {
        let key = format!("redlock:{r}");
        for m in [source, target] {
            assert!(
                !cluster.members[m].exists(key.as_bytes()),
                "{key} left on member {m}"
            );
        }
    }
    let (moved, ask) = cluster.redirects_sent(source);
    assert!(moved > before.0 .0, "the source answered MOVED ({moved})");
    assert!(ask > before.0 .1, "the source answered ASK ({ask})");
    assert!(cluster.owner_of(b"redlock:{m}:own-0") == target);
    // The engines followed them (their own count, per node set).
    let followed = |e: &Redlock| e.nodes_status()[0].redirects.unwrap_or_default();
    for e in [a, b] {
        let r = followed(e);
        assert!(r.moved > 0 && r.ask > 0, "redirects followed: {r:?}");
    }
    // The target was already a master: still voting.
    assert!(until_outcome(a, own[0].as_bytes(), true, Duration::from_millis(200)).await);
}
