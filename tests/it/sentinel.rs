//! Sentinel-managed node sets (through fred): a master, its replica and one Sentinel started here. The
//! lock follows a failover, and the promoted replica does not vote until one `max_ttl` has passed (it
//! may not have received the latest lock writes).
#![cfg(feature = "fred")]

use std::time::{Duration, Instant};

use crate::common::{build, guarded, nodes, until_outcome, urls};
use redlock_engine::Redlock;
use testkit::SentinelSet;

const TTL: Duration = Duration::from_secs(1);

#[tokio::test]
async fn a_failover_is_followed_and_the_promoted_replica_waits_out_max_ttl() {
    let mut set = SentinelSet::start();
    // One Sentinel-managed vote beside two standalone masters, and the set alone.
    let standalone = nodes(2);
    let mut mixed_urls = vec![set.url()];
    mixed_urls.extend(urls(&standalone));
    let mixed = quarantined_engine(mixed_urls).await;
    let alone = quarantined_engine(vec![set.url()]).await;
    // Fresh servers are younger than max_ttl: wait until they vote.
    assert!(until_outcome(&alone, b"probe", true, Duration::from_secs(10)).await);
    assert!(until_outcome(&mixed, b"probe", true, Duration::from_secs(10)).await);
    let key = b"redlock:{sentinel-probe}";
    let lock = alone.acquire(b"sentinel-probe", TTL).await.unwrap();
    assert!(
        set.master.exists(key),
        "written to the master Sentinel names"
    );
    alone.release(lock).await.unwrap();

    set.master.kill9();
    let replica_port = set.replica.port;
    let until = Instant::now() + Duration::from_secs(30);
    // The switch happened after the start of the last query that still named the old master: nobody,
    // fred included, could have reached the replica as master before that.
    let mut promoted = Instant::now();
    loop {
        let asked = Instant::now();
        if set.master_port() == Some(replica_port) {
            break;
        }
        promoted = asked;
        assert!(Instant::now() < until, "the Sentinel did not fail over");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Meanwhile the two standalone masters still make a majority.
    let lock = mixed.acquire(b"during-failover", TTL).await.unwrap();
    mixed.release(lock).await.unwrap();
    // The set alone: no grant until the promoted replica is known for max_ttl (2 s).
    assert!(until_outcome(&alone, b"probe", true, Duration::from_secs(15)).await);
    let first = promoted.elapsed();
    assert!(
        first >= Duration::from_millis(1900),
        "the promoted replica voted {first:?} after the failover"
    );
    // And the grant was written to the promoted replica, now the master.
    let lock = alone.acquire(b"after-failover", TTL).await.unwrap();
    assert!(set.replica.exists(b"redlock:{after-failover}"));
    alone.release(lock).await.unwrap();
}

async fn quarantined_engine(urls: Vec<String>) -> Redlock {
    build(guarded(urls, Duration::from_secs(2))).await
}
