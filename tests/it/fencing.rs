//! Fencing tokens against real nodes: successive holders get larger tokens, across engines, after an
//! expiry, and after every node lost its counters.

use std::time::Duration;

use crate::common::{each_transport, nodes, quick_nodes, urls};
use redlock_engine::LockError;

const TTL: Duration = Duration::from_secs(5);

#[tokio::test]
async fn successive_holders_get_increasing_tokens() {
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |_transport, [a, b]| {
        let mut last = 0;
        for i in 0..20 {
            let e = if i % 2 == 0 { &a } else { &b };
            let lock = e.acquire_fenced(b"fenced", TTL).await.unwrap();
            let token = lock.fencing_token().expect("a fenced lock has a token");
            assert!(token > last, "token {token} after {last}");
            last = token;
            e.release(lock).await.unwrap();
        }
        // plain locks carry none
        let plain = a.acquire(b"plain", TTL).await.unwrap();
        assert_eq!(plain.fencing_token(), None);
        a.release(plain).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_later_holder_after_expiry_has_the_larger_token() {
    let (_cluster, [e]) = quick_nodes(3).await;
    let old = e
        .acquire_fenced(b"paused", Duration::from_millis(200))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await; // the holder "paused" past its validity
    let new = e.acquire_fenced(b"paused", TTL).await.unwrap();
    assert!(new.fencing_token() > old.fencing_token());
    assert!(matches!(e.release(old).await, Err(LockError::NotOwner)));
    e.release(new).await.unwrap();
}

#[tokio::test]
async fn counters_above_the_clock_are_respected_and_losing_them_does_not_repeat_tokens() {
    let (cluster, [e]) = quick_nodes(3).await;
    // A counter far above the clock component (as after many grants in one millisecond).
    let high = u64::MAX / 2;
    for node in &cluster[..2] {
        node.cmd(&[
            b"SET",
            b"redlock:{seeded}:fence",
            format!("{high:020}").as_bytes(),
        ]);
    }
    let lock = e.acquire_fenced(b"seeded", TTL).await.unwrap();
    assert!(lock.fencing_token().unwrap() > high);
    e.release(lock).await.unwrap();

    // Every node loses its counters (restart without persistence): the clock component keeps tokens
    // increasing for holders further apart than a millisecond.
    let before = e.acquire_fenced(b"wiped", TTL).await.unwrap();
    let t0 = before.fencing_token().unwrap();
    e.release(before).await.unwrap();
    for node in &cluster {
        node.cmd(&[b"FLUSHALL"]);
    }
    tokio::time::sleep(Duration::from_millis(2)).await;
    let after = e.acquire_fenced(b"wiped", TTL).await.unwrap();
    assert!(after.fencing_token().unwrap() > t0);
    e.release(after).await.unwrap();
}

#[tokio::test]
async fn local_waiters_never_inherit_a_token() {
    let (_cluster, [e]) = quick_nodes(3).await;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let e = e.clone();
        tasks.push(tokio::spawn(async move {
            let mut tokens = Vec::new();
            for _ in 0..5 {
                let lock = e.acquire_fenced(b"cohort-fenced", TTL).await.unwrap();
                tokens.push(lock.fencing_token().unwrap());
                e.release(lock).await.unwrap();
            }
            tokens
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let distinct: std::collections::HashSet<_> = all.iter().collect();
    assert_eq!(distinct.len(), all.len(), "every holder got its own token");
}
