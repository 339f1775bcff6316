//! A 3-shard cluster with one replica per master, under load from two engines (quarantine on,
//! `max_ttl` 2 s): a `CLUSTER FAILOVER` in one shard, then a `kill -9` of another shard's master.
//! Each time only that shard's slots lose the vote, for about `max_ttl` from the promotion; locks in
//! the other shards are granted throughout; the overlap checker finds no lock granted twice.

use std::time::Duration;

use tokio::time::Instant;

use crate::cluster_load::{resources_on, Load, Outcome};
use crate::common::{self, build, until_outcome};
use redlock_engine::Redlock;
use testkit::RedisCluster;

const TTL: Duration = Duration::from_secs(1);
const MAX_TTL: Duration = Duration::from_secs(2);

async fn guarded(cluster: &RedisCluster) -> Redlock {
    build(common::guarded([cluster.url()], MAX_TTL)).await
}

/// Ends a phase once the victim shard had time to vote again, and checks what it must show: no
/// resource granted twice, the victim shard's resources not granted for about `MAX_TTL` after
/// `promoted` (then granted again), the others granted without a long gap around it.
async fn end_phase(
    load: Load,
    what: &str,
    victim: &[String],
    others: &[String],
    event: Instant,
) -> Outcome {
    let promoted = Instant::now();
    tokio::time::sleep(MAX_TTL + Duration::from_secs(3)).await;
    let out = load.stop().await;
    assert!(
        out.overlaps().is_empty(),
        "{what}: granted twice: {:?}",
        out.overlaps()
    );
    let first = out
        .first_grant_after(victim, promoted)
        .unwrap_or_else(|| panic!("{what}: the victim shard never voted again"));
    let quiet = first.saturating_duration_since(promoted);
    assert!(
        quiet >= MAX_TTL - Duration::from_millis(300),
        "{what}: the promoted master voted {quiet:?} after its promotion"
    );
    let gap = out.longest_gap(others, event, promoted + MAX_TTL);
    assert!(
        gap < Duration::from_millis(900),
        "{what}: the other shards stopped for {gap:?}"
    );
    let theirs: Vec<_> = out
        .failures
        .iter()
        .filter(|(r, ..)| others.contains(r))
        .collect();
    assert!(
        theirs.is_empty(),
        "{what}: failures on the other shards: {theirs:?}"
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_or_a_killed_master_suspends_only_its_shard() {
    let mut cluster = RedisCluster::start_with_replicas(3, 1);
    let (a, b) = (guarded(&cluster).await, guarded(&cluster).await);
    let probes: Vec<String> = (0..3)
        .map(|m| resources_on(&cluster, m, true, 1, "probe").remove(0))
        .collect();
    for probe in &probes {
        // Every master just started: they vote once older than max_ttl.
        assert!(until_outcome(&a, probe.as_bytes(), true, Duration::from_secs(10)).await);
    }

    // Phase 1: a manual failover in shard 0.
    let (victim, others) = (
        resources_on(&cluster, 0, true, 4, "v"),
        resources_on(&cluster, 0, false, 8, "o"),
    );
    let all: Vec<String> = victim.iter().chain(&others).cloned().collect();
    let replica = cluster.replica_of(0).expect("master 0 has a replica");
    let load = Load::start(&[a.clone(), b.clone()], &all, 4, TTL, true);
    tokio::time::sleep(Duration::from_millis(800)).await;
    let event = Instant::now();
    let r = replica;
    let c = &cluster;
    tokio::task::block_in_place(|| c.failover(r, false));
    end_phase(load, "CLUSTER FAILOVER", &victim, &others, event).await;

    // Phase 2: kill -9 of shard 1's master; the cluster promotes its replica.
    let dying = cluster.owner_of(format!("redlock:{{{}}}", probes[1]).as_bytes());
    let (victim, others) = (
        resources_on(&cluster, dying, true, 4, "w"),
        resources_on(&cluster, dying, false, 8, "p"),
    );
    let all: Vec<String> = victim.iter().chain(&others).cloned().collect();
    let replica = cluster.replica_of(dying).expect("the master has a replica");
    let load = Load::start(&[a.clone(), b.clone()], &all, 4, TTL, true);
    tokio::time::sleep(Duration::from_millis(800)).await;
    let event = Instant::now();
    cluster.members[dying].kill9();
    let c = &cluster;
    tokio::task::block_in_place(|| c.wait_promoted(replica, Duration::from_secs(20)));
    let out = end_phase(load, "kill -9", &victim, &others, event).await;
    assert!(
        out.grants.len() > 100,
        "load ran: {} grants",
        out.grants.len()
    );
}
