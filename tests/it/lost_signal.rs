//! Every guard can learn it is lost: `is_held` asks a quorum of nodes (changing nothing), and
//! `lost` completes when the validity ends, when a check found the lock gone, or at a shutdown.

use std::time::{Duration, Instant};

use crate::common::{dead_url, fresh_engine, fresh_nodes, nodes, urls, RedisNode};
use redlock_engine::{LockError, LockGuard};

/// `guard.is_held()` asked while nodes 1 and 2 stop answering (SIGSTOP): an error, not a no.
async fn no_answer_with_two_frozen(guard: &LockGuard, cluster: &[RedisNode]) {
    cluster[1].freeze();
    cluster[2].freeze();
    let asked = guard.is_held().await;
    cluster[1].thaw();
    cluster[2].thaw();
    assert!(
        matches!(asked, Err(LockError::QuorumNotReached { .. })),
        "{asked:?}"
    );
}

#[tokio::test]
async fn a_check_finds_every_kind_held_then_gone_after_a_forced_release_or_an_eviction() {
    let (cluster, [redlock, operator]) = fresh_nodes(3).await;
    let guards = vec![
        ("plain", redlock.lock("plain").await.unwrap()),
        ("fenced", redlock.lock("fenced").fenced().await.unwrap()),
        ("read", redlock.lock("read").read().await.unwrap()),
        ("write", redlock.lock("write").write().await.unwrap()),
        ("fair", redlock.lock("fair").fair().await.unwrap()),
        ("slot", redlock.lock("slot").slots(2).await.unwrap()),
        (
            "many",
            redlock.lock_many(["many-a", "many-b"]).await.unwrap(),
        ),
        // Last: a forced release keeps a semaphore's permits (they expire on their own), so it
        // is lost here as to an eviction, every key of every node flushed.
        ("permit", redlock.lock("permit").permits(2).await.unwrap()),
    ];
    for (name, guard) in &guards {
        assert!(guard.is_held().await.unwrap(), "{name}");
        assert!(guard.is_valid(), "{name}");
    }
    for (name, guard) in &guards {
        let resource = String::from_utf8_lossy(guard.resource()).into_owned();
        match *name {
            "permit" => cluster.iter().for_each(|node| {
                node.cmd_str(&["FLUSHALL"]);
            }),
            _ => drop(operator.force_release(&resource).await.unwrap()),
        }
        assert!(!guard.is_held().await.unwrap(), "{name}: forced out");
        assert!(
            !guard.is_valid(),
            "{name}: not valid once the nodes said so"
        );
        assert_eq!(guard.remaining(), Duration::ZERO, "{name}");
        let why = tokio::time::timeout(Duration::from_secs(1), guard.lost()).await;
        assert!(matches!(why, Ok(LockError::NotOwner)), "{name}: {why:?}");
    }
}

#[tokio::test]
async fn another_owner_after_the_ttl_is_seen_and_lost_completes_when_validity_ends() {
    let (_cluster, [redlock, other]) = fresh_nodes(3).await;
    let ttl = Duration::from_millis(400);
    let guard = redlock.lock("short").ttl(ttl).await.unwrap();
    let began = Instant::now();
    let why = tokio::time::timeout(Duration::from_secs(2), guard.lost()).await;
    assert!(matches!(why, Ok(LockError::Lost)), "{why:?}");
    let took = began.elapsed();
    assert!(
        took < ttl,
        "lost at its validity's end, before the TTL: {took:?}"
    );
    // Someone else holds it now: the nodes say it is not ours.
    let _theirs = other.lock("short").await.unwrap();
    assert!(!guard.is_held().await.unwrap());
}

#[tokio::test]
async fn a_shutdown_ends_the_lost_signal_and_a_minority_down_does_not() {
    let cluster = nodes(2);
    let mut all = urls(&cluster);
    all.push(dead_url());
    let redlock = fresh_engine(all).await;
    let guard = redlock.lock("kept").await.unwrap();
    // Two of three answer: held.
    assert!(guard.is_held().await.unwrap());
    let lost = guard.lost();
    let (why, ()) = tokio::join!(lost, async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        redlock.shutdown().await;
    });
    assert!(matches!(why, LockError::Closed), "{why:?}");
    assert!(!guard.is_held().await.unwrap(), "released by the shutdown");
}

#[tokio::test]
async fn too_few_answers_to_tell_is_an_error_not_a_no() {
    let (cluster, [redlock]) = fresh_nodes(3).await;
    let guard = redlock.lock("unsure").await.unwrap();
    // Two of three nodes stop answering (SIGSTOP): no quorum can answer either way.
    no_answer_with_two_frozen(&guard, &cluster).await;
    assert!(
        guard.is_valid(),
        "an unanswered check does not lose the lock"
    );
    assert!(guard.is_held().await.unwrap());
}

#[tokio::test]
async fn a_renewed_lock_found_gone_is_lost_at_once() {
    let (_cluster, [redlock, operator]) = fresh_nodes(3).await;
    let lock = redlock
        .lock("renewed")
        .renewed(redlock_engine::RenewPolicy::default())
        .await
        .unwrap();
    assert!(lock.is_held().await.unwrap());
    operator.force_release("renewed").await.unwrap();
    assert!(!lock.is_held().await.unwrap());
    assert!(lock.is_lost());
    tokio::time::timeout(Duration::from_millis(100), lock.lost())
        .await
        .expect("lost at once, not at the next renewal");
}

#[tokio::test]
async fn a_round_decided_early_by_failures_is_no_answer_not_a_no() {
    // Held on 5 nodes; then 2 lose the key, 1 is killed and 2 stop answering: the check's round is
    // lost at once (3 yes are out of reach), but the 2 silent nodes may still hold it.
    let (mut cluster, [redlock]) = fresh_nodes(5).await;
    let guard = redlock.lock("early").await.unwrap();
    for node in &cluster[3..] {
        let keys = node.cmd_str(&["KEYS", "*early*"]);
        for key in keys.split_whitespace() {
            node.cmd_str(&["DEL", key]);
        }
    }
    cluster[0].kill9();
    no_answer_with_two_frozen(&guard, &cluster).await;
    assert!(guard.is_valid(), "not marked lost on no answer");
}
