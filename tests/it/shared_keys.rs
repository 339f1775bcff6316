//! Shared keys (`KeyFormat::Plain`, `Builder::shared_keys`): the key of a resource is its name, as
//! other Redlock clients write it. This engine and the `rslock` crate contend for the same keys on
//! three real nodes and exclude each other; the kinds with extra keys work on standalone nodes and,
//! on a Redis Cluster, are refused for names without a hash tag instead of failing there.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redlock_engine::{LockError, LockKind, Redlock, Verdict};
use rslock::LockManager;
use testkit::RedisNode;

const TTL: Duration = Duration::from_secs(2);

async fn ours(nodes: &[RedisNode]) -> Redlock {
    crate::common::builder()
        .nodes(testkit::urls(nodes))
        .shared_keys()
        .retry(10_000, Duration::from_millis(2), Duration::from_millis(3))
        .acquire_timeout(Duration::from_secs(10))
        .build()
        .await
        .expect("engine builds")
}

fn theirs(nodes: &[RedisNode]) -> LockManager {
    let mut rl = LockManager::new(testkit::urls(nodes));
    rl.set_retry(1, Duration::ZERO);
    rl
}

/// One hold: who, and when it started and ended, each read while the lock was held.
type Log = Arc<Mutex<Vec<(&'static str, Instant, Instant)>>>;

async fn hold(log: &Log, who: &'static str) {
    let start = Instant::now();
    tokio::time::sleep(Duration::from_millis(3)).await;
    log.lock().unwrap().push((who, start, Instant::now()));
}

#[tokio::test]
async fn this_engine_and_rslock_exclude_each_other_on_the_same_keys() {
    let nodes = testkit::nodes(3);
    let e = ours(&nodes).await;
    let rl = theirs(&nodes);
    let log: Log = Arc::default();
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let (e, our_log) = (e.clone(), log.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                let lock = e.acquire("shared:res", TTL).await.expect("ours acquires");
                hold(&our_log, "ours").await;
                assert!(lock.is_valid(), "a hold outlived its validity");
                e.release(lock).await.expect("ours releases");
            }
        }));
        let (rl, their_log) = (rl.clone(), log.clone());
        tasks.push(tokio::spawn(async move {
            let until = Instant::now() + Duration::from_secs(10);
            let mut won = 0;
            while won < 10 {
                assert!(Instant::now() < until, "rslock starved");
                match rl.lock("shared:res".as_bytes(), TTL).await {
                    Ok(lock) => {
                        hold(&their_log, "rslock").await;
                        lock.release().await;
                        won += 1;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(2)).await,
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("no task panicked");
    }
    let mut holds = log.lock().unwrap().clone();
    holds.sort_by_key(|h| h.1);
    for pair in holds.windows(2) {
        assert!(
            pair[1].1 >= pair[0].2,
            "{} held from {:?} while {} held until {:?}",
            pair[1].0,
            pair[1].1,
            pair[0].0,
            pair[0].2
        );
    }
    let count = |who| holds.iter().filter(|h| h.0 == who).count();
    assert_eq!((count("ours"), count("rslock")), (30, 30));
    assert!(
        nodes.iter().all(|n| !n.exists(b"shared:res")),
        "a key was left behind"
    );
}

#[tokio::test]
async fn a_lock_held_by_one_client_is_refused_to_the_other() {
    let nodes = testkit::nodes(3);
    let e = ours(&nodes).await;
    let rl = theirs(&nodes);

    let lock = e.try_acquire("held", TTL).await.unwrap();
    assert!(
        nodes.iter().all(|n| n.exists(b"held")),
        "the key is the name"
    );
    assert!(rl.lock("held".as_bytes(), TTL).await.is_err());
    e.release(lock).await.unwrap();
    // A release returns at its majority: let the last node's delete land first, or rslock's SET
    // may lose there and win on the other two (a lock held on two of three nodes, which inspect
    // below would rightly not call held everywhere).
    let gone = crate::common::eventually(Duration::from_secs(2), || {
        nodes.iter().all(|n| !n.exists(b"held"))
    })
    .await;
    assert!(gone, "released on every node");

    let theirs = rl
        .lock("held".as_bytes(), TTL)
        .await
        .expect("rslock acquires");
    let refused = e.try_acquire("held", TTL).await.unwrap_err();
    assert!(
        matches!(refused, LockError::Contended { local: false, .. }),
        "{refused:?}"
    );
    // rslock's value is not of our format: inspect says so, and that it is held, not ours.
    let seen = e.inspect("held").await.unwrap();
    assert_eq!(seen.verdict, Verdict::Held);
    for node in &seen.nodes {
        let state = node.state.as_ref().unwrap();
        assert_eq!(state.kind, Some(LockKind::FOREIGN));
        assert!(state.held && !state.ours);
    }
    theirs.release().await;
    let again = e.try_acquire("held", TTL).await.expect("free again");
    e.release(again).await.unwrap();
}

#[tokio::test]
async fn kinds_with_extra_keys_work_with_plain_keys_on_standalone_nodes() {
    let nodes = testkit::nodes(3);
    let e = ours(&nodes).await;
    let fenced = e.acquire_fenced("extra", TTL).await.unwrap();
    assert!(nodes.iter().all(|n| n.exists(b"extra:fence")));
    e.release(fenced).await.unwrap();
    let read = e.acquire_read("extra", TTL).await.unwrap();
    e.release(read).await.unwrap();
    let write = e.acquire_write("extra", TTL).await.unwrap();
    e.release(write).await.unwrap();
    let permit = e.acquire_permit("extra", 2, TTL).await.unwrap();
    e.release(permit).await.unwrap();
    let fair = e.acquire_fair("extra", TTL).await.unwrap();
    assert_eq!(fair.resource(), b"extra");
    e.release(fair).await.unwrap();
    assert!(nodes.iter().all(|n| !n.exists(b"extra")));
    // Braces are part of the name here: `{extra}` is another lock.
    let tagged = e.try_acquire("{extra}", TTL).await.unwrap();
    assert_eq!(tagged.resource(), b"{extra}");
    assert!(nodes.iter().all(|n| n.exists(b"{extra}")));
    e.release(tagged).await.unwrap();
}

#[tokio::test]
async fn on_a_cluster_extra_keys_need_a_tag_in_the_name() {
    let cluster = testkit::RedisCluster::start(3);
    let e = crate::common::builder()
        .nodes(vec![cluster.url()])
        .key_format(redlock_engine::KeyFormat::Plain)
        .key_prefix(Vec::new())
        .build()
        .await
        .expect("engine builds");
    // One key: fine, and its release (no notification: `name:wait` is in another slot) lands.
    let lock = e.try_acquire("orders", TTL).await.unwrap();
    let owner = cluster.owner_of(b"orders");
    assert!(cluster.members[owner].exists(b"orders"));
    e.release(lock).await.unwrap();
    assert!(!cluster.members[owner].exists(b"orders"));
    // Extra keys of an untagged name: refused before anything is sent.
    let refused = e.acquire_fenced("orders", TTL).await.unwrap_err();
    assert!(matches!(refused, LockError::InvalidInput(_)), "{refused:?}");
    let refused = e.acquire_read("orders", TTL).await.unwrap_err();
    assert!(matches!(refused, LockError::InvalidInput(_)), "{refused:?}");
    // With the name's own tag they share its slot.
    let fenced = e.acquire_fenced("{orders}", TTL).await.unwrap();
    e.release(fenced).await.unwrap();
}
