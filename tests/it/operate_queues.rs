//! `inspect` on the kinds that keep more than one key's worth of holders: the fair lock's queue (its
//! waiters, per node, the holder's own entry not counted) and the semaphore's live permits and K.
//! The rest of `inspect` is in `tests/it/operate.rs`.

use std::time::Duration;

use crate::common::{engine, engine_with, nodes, transports, urls};
use redlock_engine::{KeyState, LockKind, Redlock, Verdict};

const TTL: Duration = Duration::from_secs(10);

async fn states(e: &Redlock, resource: &str) -> (Verdict, Vec<KeyState>) {
    let seen = e.inspect(resource).await.unwrap();
    let states = seen
        .nodes
        .iter()
        .map(|n| n.state.clone().unwrap())
        .collect();
    (seen.verdict, states)
}

#[tokio::test]
async fn inspect_counts_the_fair_queue_and_the_semaphore_permits() {
    let n = nodes(3);
    let e = engine(urls(&n), transports()[0]).await;
    let waiter = engine_with(&n, |b| b.acquire_timeout(Duration::from_secs(20))).await;

    let holder = e.acquire_fair("fq", TTL).await.unwrap();
    let (verdict, s) = states(&e, "fq").await;
    assert_eq!(verdict, Verdict::Held);
    assert!(
        s.iter()
            .all(|s| s.kind.map(LockKind::name) == Some("fair") && s.ours),
        "{s:?}"
    );
    assert!(
        s.iter().all(|s| s.fair_waiters == 0),
        "the holder is no waiter: {s:?}"
    );
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let w = waiter.clone();
        tasks.push(tokio::spawn(async move {
            let lock = w.acquire_fair("fq", TTL).await.unwrap();
            w.release(lock).await.unwrap();
        }));
    }
    let two_waiting = crate::common::eventually(Duration::from_secs(3), || {
        n.iter()
            .filter(|x| {
                x.cmd(&[b"ZCARD", b"redlock:{fq}:fair:q"])
                    .parse::<u64>()
                    .is_ok_and(|c| c == 3)
            })
            .count()
            == 3
    })
    .await;
    assert!(two_waiting);
    let (_, s) = states(&e, "fq").await;
    assert!(s.iter().all(|s| s.fair_waiters == 2), "{s:?}");
    // Another engine sees the same queue, and a holder that is not its own.
    let (_, theirs) = states(&waiter, "fq").await;
    assert!(theirs.iter().all(|s| s.fair_waiters == 2 && !s.ours));
    e.release(holder).await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    // Read through the engine that released last: a release returns once a majority confirmed it,
    // and its one connection per node puts this read behind the release on every node (read through
    // `e`, the third node may not have run it yet).
    let (verdict, s) = states(&waiter, "fq").await;
    assert_eq!(verdict, Verdict::Free);
    assert!(
        s.iter().all(|s| s.fair_waiters == 0 && s.kind.is_none()),
        "{s:?}"
    );

    let a = e.acquire_permit("sem", 3, TTL).await.unwrap();
    let b = e.acquire_permit("sem", 3, TTL).await.unwrap();
    let (verdict, s) = states(&e, "sem").await;
    assert_eq!(verdict, Verdict::Held);
    assert!(
        s.iter()
            .filter(|s| s.kind.map(LockKind::name) == Some("semaphore"))
            .count()
            >= 2,
        "{s:?}"
    );
    // Each permit is on at least floor(3·3/4)+1 = 3 nodes: all of them here.
    assert!(
        s.iter()
            .all(|s| s.permits == 2 && s.permit_limit == Some(3) && s.remaining.is_some()),
        "{s:?}"
    );
    e.release(a).await.unwrap();
    let (_, s) = states(&e, "sem").await;
    assert!(s.iter().all(|s| s.permits == 1), "{s:?}");
    e.release(b).await.unwrap();
    let (verdict, s) = states(&e, "sem").await;
    assert_eq!(verdict, Verdict::Free);
    assert!(s.iter().all(|s| s.permits == 0 && s.permit_limit.is_none()));
}

/// A fair queue of 100k entries (planted dead, behind a holder) is read without a script that runs
/// through it: liveness is read for the first 1,000 entries (none live here), and the rest count
/// as they are. Without that bound the count would be 0, after 100k reads in one script.
#[tokio::test]
async fn inspect_reads_the_liveness_of_a_long_fair_queues_first_entries_only() {
    let n = nodes(3);
    let e = engine(urls(&n), transports()[0]).await;
    let holder = e.acquire_fair("long", TTL).await.unwrap();
    for x in &n {
        x.cmd(&[
            b"EVAL",
            b"for i = 1, 100000 do redis.call('ZADD', KEYS[1], 9e15 + i, 'dead' .. i) end",
            b"1",
            b"redlock:{long}:fair:q",
        ]);
    }
    let (_, s) = states(&e, "long").await;
    // 100,001 entries: the holder's and 999 dead ones read, 99,001 counted unread.
    assert!(s.iter().all(|s| s.fair_waiters == 99_001), "{s:?}");
    e.release(holder).await.unwrap();
}

/// A forced release of a fair lock wakes its queue: the head takes the lock at once, not at its
/// keepalive (a quarter TTL, 5 s here), when it would otherwise try again.
#[tokio::test]
async fn force_release_of_a_fair_lock_wakes_its_queue() {
    let n = nodes(3);
    let ttl = Duration::from_secs(20);
    let stuck = engine(urls(&n), transports()[0]).await;
    let operator = engine(urls(&n), transports()[0]).await;
    let waiter = engine_with(&n, |b| b.acquire_timeout(Duration::from_secs(30))).await;
    let held = stuck.acquire_fair("forced", ttl).await.unwrap();
    let task = tokio::spawn(async move {
        let lock = waiter.acquire_fair("forced", ttl).await;
        (tokio::time::Instant::now(), lock.map(|_| ()), waiter)
    });
    let queued = crate::common::eventually(Duration::from_secs(3), || {
        n.iter()
            .all(|x| x.cmd(&[b"ZCARD", b"redlock:{forced}:fair:q"]) == "2")
    })
    .await;
    assert!(queued);
    // The waiter's round is answered: it sleeps its keepalive now.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let forced = tokio::time::Instant::now();
    assert_eq!(
        operator.force_release("forced").await.unwrap().deleted_on,
        3
    );
    let (granted, lock, _waiter) = task.await.unwrap();
    lock.unwrap();
    let after = granted.saturating_duration_since(forced);
    assert!(after < Duration::from_secs(2), "granted {after:?} after");
    drop(held);
}
