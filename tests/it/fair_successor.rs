//! A fair lock's release that grants the next waiter of its own engine in the same round
//! (`engine::successors`): no round and no message for that waiter, never past a waiter of another
//! engine ahead of it, and a lock the release handed to a waiter that had gone is released at once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{eventually, fair_queued as queued, nodes, urls, RedisNode};
// The 2 s keepalive: only releases (their grants and wake-ups) move anyone sooner.
use crate::fair_wake::{engine, psubscribed, PAUSE, TTL};
use redlock_engine::Redlock;
use testkit::Proxy;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

async fn queued_everywhere(cluster: &[RedisNode], resource: &str, n: usize) {
    let on_all = || cluster.iter().all(|node| queued(node, resource) >= n);
    assert!(
        eventually(Duration::from_secs(3), on_all).await,
        "{n} queued"
    );
}

/// Counts the messages published on the channels matching `pattern` (a raw subscriber).
async fn message_counter(node: &RedisNode, pattern: &str) -> Arc<Mutex<usize>> {
    let mut s = psubscribed(node, pattern).await;
    let count = Arc::new(Mutex::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        let mut text = String::new();
        loop {
            let mut chunk = [0u8; 1024];
            let Ok(n) = s.read(&mut chunk).await else {
                return;
            };
            if n == 0 {
                return;
            }
            text.push_str(&String::from_utf8_lossy(&chunk[..n]));
            *counted.lock().unwrap() = text.matches("pmessage").count();
        }
    });
    count
}

/// Holds `resource` in `engine` until its turn comes, records it, holds a moment, releases.
fn take(
    engine: &Redlock,
    resource: &'static str,
    who: &'static str,
    order: &Arc<Mutex<Vec<(&'static str, u32)>>>,
) -> tokio::task::JoinHandle<()> {
    let (engine, order) = (engine.clone(), order.clone());
    tokio::spawn(async move {
        let lock = engine.acquire_fair(resource, TTL).await.unwrap();
        order.lock().unwrap().push((who, lock.attempts()));
        tokio::time::sleep(Duration::from_millis(50)).await;
        engine.release(lock).await.unwrap();
    })
}

#[tokio::test]
async fn a_release_grants_its_engines_next_waiter_but_never_past_another_engines() {
    let cluster = nodes(3);
    let (home, away) = (engine(urls(&cluster)).await, engine(urls(&cluster)).await);
    let resource = "succ";
    let holder = home.acquire_fair(resource, TTL).await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    // Queued in this order: home's first, away's, home's second.
    let first = take(&home, resource, "home 1", &order);
    queued_everywhere(&cluster, resource, 2).await;
    let other = take(&away, resource, "away", &order);
    queued_everywhere(&cluster, resource, 3).await;
    let second = take(&home, resource, "home 2", &order);
    queued_everywhere(&cluster, resource, 4).await;
    // Every subscription's first confirmation (one attempt each) is past.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let messages = message_counter(&cluster[0], &format!("redlock:{{{resource}}}:w:*")).await;
    let start = Instant::now();
    home.release(holder).await.unwrap();
    for task in [first, other, second] {
        task.await.unwrap();
    }
    let order = order.lock().unwrap().clone();
    let names: Vec<&str> = order.iter().map(|(who, _)| *who).collect();
    // Home's second waiter is home's lowest parked one when home's first releases, but away's
    // is the head: the nodes do not grant it, they hand the key to away's by message.
    assert_eq!(names, ["home 1", "away", "home 2"]);
    assert!(
        start.elapsed() < PAUSE,
        "every hand-over came from a release"
    );
    // Home's first was granted by the holder's release in its own round: no round of its own
    // after its enqueue and its subscription's first attempt. (Away's and home's second are
    // granted by the releases' messages, or, where too few were heard, by one round of their
    // own.)
    let attempts = |who: &str| order.iter().find(|(w, _)| *w == who).unwrap().1;
    assert!(
        attempts("home 1") <= 2,
        "home's first took no round when granted: {order:?}"
    );
    assert!(
        attempts("away") <= 3 && attempts("home 2") <= 3,
        "the others took at most one round when handed the lock: {order:?}"
    );
    // Two messages: the grant to away's (home's first released) and to home's second (away
    // released); none for home's first.
    assert!(eventually(Duration::from_secs(1), || *messages.lock().unwrap() >= 2).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*messages.lock().unwrap(), 2, "messages published");
    for node in &cluster {
        assert_eq!(queued(node, resource), 0);
    }
}

/// The next waiter's acquire is dropped while the release that grants it is on the wire (every
/// node 300 ms away): the lock handed to nobody is released, and the waiter after it gets the
/// lock at once, not after the handed lock's TTL.
#[tokio::test]
async fn a_lock_granted_to_a_waiter_that_is_gone_is_released() {
    let cluster = nodes(3);
    let mut proxies = Vec::new();
    for node in &cluster {
        proxies.push(Proxy::start(node.port).await.unwrap());
    }
    // A node deadline past the proxies' round trip (600 ms), so the release is answered.
    let home = crate::common::builder()
        .nodes(proxies.iter().map(Proxy::url))
        .acquire_timeout(Duration::from_secs(30))
        .retry(20, PAUSE, Duration::ZERO)
        .node_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    let away = engine(urls(&cluster)).await;
    let resource = "gone";
    let holder = home.acquire_fair(resource, TTL).await.unwrap();
    let (home2, r) = (home.clone(), resource);
    let gone = tokio::spawn(async move { home2.acquire_fair(r, TTL).await });
    queued_everywhere(&cluster, resource, 2).await;
    let (away2, r) = (away.clone(), resource);
    let next = tokio::spawn(async move {
        let lock = away2.acquire_fair(r, TTL).await.unwrap();
        let got = Instant::now();
        away2.release(lock).await.unwrap();
        got
    });
    queued_everywhere(&cluster, resource, 3).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    for proxy in &proxies {
        proxy.set_delay(Duration::from_millis(300));
    }
    let releasing = {
        let home = home.clone();
        tokio::spawn(async move { home.release(holder).await })
    };
    // The release is on its way (it named the parked waiter): the waiter goes.
    tokio::time::sleep(Duration::from_millis(100)).await;
    gone.abort();
    let aborted = Instant::now();
    releasing.await.unwrap().unwrap();
    let got = next.await.unwrap();
    assert!(
        got.duration_since(aborted) < Duration::from_secs(3),
        "the next waiter waited {:?} (the handed lock's TTL is {TTL:?})",
        got.duration_since(aborted)
    );
}
