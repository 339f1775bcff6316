//! Waiting under contention without blind polling: the local FIFO queue, release notifications across
//! engines (as across processes), and bounded local hand-off.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{nodes, urls, RedisNode};
use redlock_engine::{Config, LockError, Redlock};

const TTL: Duration = Duration::from_secs(5);

fn config(nodes: &[RedisNode]) -> Config {
    Config {
        retry_count: 50,
        retry_delay: Duration::from_millis(20),
        retry_jitter: Duration::from_millis(20),
        ..crate::common::fresh_config(urls(nodes))
    }
}

fn set_calls(node: &RedisNode) -> u64 {
    crate::common::calls(node, "set")
}

#[tokio::test]
async fn local_waiters_queue_fifo_and_do_not_hammer_the_nodes() {
    let cluster = nodes(3);
    let e = Redlock::new(Config {
        max_local_handoffs: 0, // measure the queue alone: every grant is a real acquire
        ..config(&cluster)
    })
    .await
    .unwrap();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (e, order) = (e.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let lock = e.acquire(b"queue", TTL).await.unwrap();
            order.lock().unwrap().push(i);
            tokio::time::sleep(Duration::from_millis(5)).await;
            e.release(lock).await.unwrap();
        }));
        // Arrive one after another, so FIFO order is well defined.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..16).collect::<Vec<_>>(), "FIFO");
    // One SET per grant: waiters never contended on the nodes (no failed attempts).
    assert_eq!(set_calls(&cluster[0]), 16);
}

/// How long `waiter` waited for `"notified"`, which `holder` holds and releases 300 ms after the
/// waiter's first attempt was refused on every node (its `SET` counted there): a waiter stalled on a
/// busy machine must not find the lock already free, or a wait "by the timer only" would read as
/// woken.
async fn waited_after_a_loss(cluster: &[RedisNode], holder: &Redlock, waiter: Redlock) -> Duration {
    let lock = holder.acquire("notified", TTL).await.unwrap();
    let before: Vec<u64> = cluster.iter().map(set_calls).collect();
    let waiting = tokio::spawn(async move {
        let started = Instant::now();
        let lock = waiter.acquire("notified", TTL).await.unwrap();
        let waited = started.elapsed();
        waiter.release(lock).await.unwrap();
        waited
    });
    let refused = crate::common::eventually(Duration::from_secs(5), || {
        cluster.iter().zip(&before).all(|(n, b)| set_calls(n) > *b)
    })
    .await;
    assert!(refused, "the waiter's first attempt reached every node");
    tokio::time::sleep(Duration::from_millis(300)).await;
    holder.release(lock).await.unwrap();
    waiting.await.unwrap()
}

#[tokio::test]
async fn a_release_wakes_a_waiter_in_another_engine_at_once() {
    let cluster = nodes(3);
    for notify in [true, false] {
        let slow_retries = |c: Config| Config {
            retry_delay: Duration::from_millis(1500),
            retry_jitter: Duration::ZERO,
            notify_releases: notify,
            ..c
        };
        let holder = Redlock::new(slow_retries(config(&cluster))).await.unwrap();
        let waiter = Redlock::new(slow_retries(config(&cluster))).await.unwrap();
        let waited = waited_after_a_loss(&cluster, &holder, waiter).await;
        if notify {
            assert!(
                waited < Duration::from_millis(800),
                "woken by the release: {waited:?}"
            );
        } else {
            assert!(
                waited >= Duration::from_millis(1400),
                "timer only: {waited:?}"
            );
        }
    }
}

#[tokio::test]
async fn local_handoff_saves_round_trips_but_is_bounded() {
    let cluster = nodes(3);
    let e = Redlock::new(config(&cluster)).await.unwrap();
    let other = Redlock::new(config(&cluster)).await.unwrap();
    let grants = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let stop = Instant::now() + Duration::from_millis(800);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (e, grants) = (e.clone(), grants.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < stop {
                let lock = e.acquire(b"cohort", TTL).await.unwrap();
                grants.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(1)).await;
                e.release(lock).await.unwrap();
            }
        }));
    }
    // Another "process" must still get its turn: hand-offs are bounded.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let lock = other
        .acquire(b"cohort", TTL)
        .await
        .expect("not starved by local hand-offs");
    let waited = started.elapsed();
    other.release(lock).await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    let grants = grants.load(std::sync::atomic::Ordering::Relaxed);
    let sets = set_calls(&cluster[0]);
    assert!(
        sets < grants,
        "hand-offs skip the nodes: {sets} SETs for {grants} grants"
    );
    // At most `max_local_handoffs` hand-offs per real acquire (one more of slack for the other
    // engine's SET and the streak cut short at the end).
    let max = u64::from(redlock_engine::Config::default().max_local_handoffs);
    assert!(
        sets * (max + 2) > grants,
        "at most {max} hand-offs per real acquire: {sets} SETs, {grants} grants"
    );
    assert!(
        waited < Duration::from_millis(700),
        "other engine waited {waited:?}"
    );
}

#[tokio::test]
async fn try_acquire_fails_fast_when_a_local_task_holds_it() {
    let cluster = nodes(3);
    let e = Redlock::new(config(&cluster)).await.unwrap();
    let lock = e.acquire(b"busy", TTL).await.unwrap();
    let before = set_calls(&cluster[0]);
    let err = e.try_acquire(b"busy", TTL).await.unwrap_err();
    assert!(
        matches!(err, LockError::Contended { local: true, .. }),
        "{err:?}"
    );
    assert_eq!(set_calls(&cluster[0]), before, "no round trip");
    e.release(lock).await.unwrap();
}

#[tokio::test]
async fn waiting_works_with_a_node_down_and_a_node_frozen() {
    let mut cluster = nodes(5);
    let fast = |c: Config| Config {
        node_timeout: Some(Duration::from_millis(50)),
        retry_delay: Duration::from_millis(1500),
        retry_jitter: Duration::ZERO,
        ..c
    };
    let holder = Redlock::new(fast(config(&cluster))).await.unwrap();
    let waiter = Redlock::new(fast(config(&cluster))).await.unwrap();
    cluster[0].kill9();
    cluster[1].freeze();
    let lock = holder.acquire(b"degraded", TTL).await.unwrap();
    let waiting = tokio::spawn(async move {
        let started = Instant::now();
        let lock = waiter.acquire(b"degraded", TTL).await.unwrap();
        waiter.release(lock).await.unwrap();
        started.elapsed()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    holder.release(lock).await.unwrap();
    let waited = waiting.await.unwrap();
    assert!(
        waited < Duration::from_millis(900),
        "notified via the healthy nodes: {waited:?}"
    );
    cluster[1].thaw();
}

#[tokio::test]
async fn an_expired_local_holder_does_not_block_waiters() {
    let cluster = nodes(3);
    let e = Redlock::new(config(&cluster)).await.unwrap();
    let forgotten = e
        .acquire(b"forgot", Duration::from_millis(200))
        .await
        .unwrap();
    let started = Instant::now();
    let lock = e.acquire(b"forgot", TTL).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    e.release(lock).await.unwrap();
    drop(forgotten);
}

#[tokio::test]
async fn a_lock_handed_to_a_cancelled_waiter_is_released() {
    let cluster = nodes(3);
    let e = Redlock::new(config(&cluster)).await.unwrap();
    let other = Redlock::new(config(&cluster)).await.unwrap();
    let lock = e.acquire(b"orphan", TTL).await.unwrap();
    let waiter = {
        let e = e.clone();
        tokio::spawn(async move { e.acquire(b"orphan", TTL).await })
    };
    tokio::time::sleep(Duration::from_millis(20)).await; // the waiter is queued
    e.release(lock).await.unwrap(); // handed to the waiter, without a round trip
    waiter.abort(); // cancelled before it could take it
    let _ = waiter.await;
    let released = async {
        for _ in 0..50 {
            if let Ok(lock) = other.try_acquire(b"orphan", TTL).await {
                return Some(lock);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    };
    let lock = released
        .await
        .expect("the orphaned hand-off is released, not left to its TTL");
    other.release(lock).await.unwrap();
}
