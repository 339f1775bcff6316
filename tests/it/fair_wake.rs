//! Fair-lock wake-ups on real nodes: a release wakes only the new head of the queue, named by a
//! digest of its value (never the value) on its engine's channel of the key, so each waiter tries
//! about twice however many wait ahead of it — where waking every waiter costs each one an attempt
//! per release ahead of it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{fair_queued as queued, nodes, urls, RedisNode};
use redlock_engine::Redlock;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

pub(crate) const TTL: Duration = Duration::from_secs(10);
/// The retry pause. A queued waiter that listens sleeps its keepalive, a quarter TTL (2.5 s), and
/// a waiter that is not woken tries only that often, so a lost or wrongly named wake-up shows as a
/// hand-over slower than this.
pub(crate) const PAUSE: Duration = Duration::from_millis(2000);

pub(crate) async fn engine(urls: Vec<String>) -> Redlock {
    crate::common::builder()
        .nodes(urls)
        .acquire_timeout(Duration::from_secs(30))
        .retry(20, PAUSE, Duration::ZERO)
        .build()
        .await
        .unwrap()
}

/// The head's wake name as the node computes it (the scripts' digest of the head's value).
fn head_name(node: &RedisNode, resource: &str) -> String {
    let key = format!("redlock:{{{resource}}}:fair:q");
    node.cmd(&[
        b"EVAL",
        b"local h = redis.call('ZRANGE', KEYS[1], 0, 0)[1] \
if h then return string.sub(redis.sha1hex(h), 1, 16) end return ''",
        b"1",
        key.as_bytes(),
    ])
}

/// A raw subscriber to the channels matching `pattern`: the (channel, payload) of the next `count`
/// messages.
async fn payloads(
    node: &RedisNode,
    pattern: &str,
    count: usize,
) -> tokio::task::JoinHandle<Vec<(String, String)>> {
    let mut s = psubscribed(node, pattern).await;
    tokio::spawn(async move {
        let mut buf = Vec::new();
        loop {
            // Each message is `*4 $8 pmessage $len pattern $len channel $len payload`: the channel
            // is the 7th line, the payload the 9th.
            let text = String::from_utf8_lossy(&buf).to_string();
            let lines: Vec<&str> = text.split("\r\n").collect();
            if lines.len() > 9 * count {
                return (0..count)
                    .map(|i| (lines[9 * i + 6].to_string(), lines[9 * i + 8].to_string()))
                    .collect();
            }
            let mut chunk = [0u8; 1024];
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "subscriber connection closed");
            buf.extend_from_slice(&chunk[..n]);
        }
    })
}

/// A raw connection subscribed to `pattern`, its confirmation read: no message published after
/// this returns is missed.
pub(crate) async fn psubscribed(node: &RedisNode, pattern: &str) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port(node))).await.unwrap();
    let req = format!(
        "*2\r\n$10\r\nPSUBSCRIBE\r\n${}\r\n{pattern}\r\n",
        pattern.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    while !String::from_utf8_lossy(&buf).contains(":1\r\n") {
        let mut chunk = [0u8; 1024];
        let n = s.read(&mut chunk).await.unwrap();
        buf.extend_from_slice(&chunk[..n]);
    }
    s
}

fn port(node: &RedisNode) -> u16 {
    node.url().rsplit(':').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_release_wakes_only_the_new_head_by_a_digest_of_its_value() {
    let cluster = nodes(3);
    let mut engines = Vec::new();
    for _ in 0..3 {
        engines.push(engine(urls(&cluster)).await);
    }
    let resource = "wake";
    let waiters = 8;
    // The holder's engine has no waiter: its release wakes the next head (a release by the
    // engine of the next head grants it instead, see `fair_successor.rs`), and no two waiters in
    // a row share an engine.
    let holder_engine = engine(urls(&cluster)).await;
    let holder = holder_engine.acquire_fair(resource, TTL).await.unwrap();
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for w in 0..waiters {
        let e = engines[w % engines.len()].clone();
        let attempts = attempts.clone();
        tasks.push(tokio::spawn(async move {
            let lock = e.acquire_fair(resource, TTL).await.unwrap();
            attempts.lock().unwrap().push(lock.attempts());
            tokio::time::sleep(Duration::from_millis(10)).await;
            e.release(lock).await.unwrap();
        }));
        let queued_everywhere = crate::common::eventually(Duration::from_secs(3), || {
            cluster.iter().all(|n| queued(n, resource) >= w + 2)
        })
        .await;
        assert!(queued_everywhere, "waiter {w} did not get queued");
    }
    // Let every subscription's first confirmation (which wakes its waiter once) pass.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pattern = format!("redlock:{{{resource}}}:w:*");
    let heard = payloads(&cluster[0], &pattern, 1).await;
    // The holder's own entry is the queue's first; the waiter after it is the next head.
    let key = format!("redlock:{{{resource}}}:fair:q");
    let second = cluster[0].cmd(&[
        b"EVAL",
        b"return string.sub(redis.sha1hex(redis.call('ZRANGE', KEYS[1], 1, 1)[1]), 1, 16)",
        b"1",
        key.as_bytes(),
    ]);
    // Its engine's channel: the key, `:w:`, the hex of the value's first 8 bytes (the engine tag).
    let second_channel = cluster[0].cmd(&[
        b"EVAL",
        b"return KEYS[2] .. ':w:' .. string.format('%02x%02x%02x%02x%02x%02x%02x%02x', \
string.byte(redis.call('ZRANGE', KEYS[1], 1, 1)[1], 1, 8))",
        b"2",
        key.as_bytes(),
        format!("redlock:{{{resource}}}").as_bytes(),
    ]);
    let start = Instant::now();
    holder_engine.release(holder).await.unwrap();
    let heard = tokio::time::timeout(Duration::from_secs(2), heard)
        .await
        .expect("the release published")
        .unwrap();
    // A grant: the key set to the head's value, and on its engine's channel its name, `g` and a
    // digest of its value and epoch.
    assert_eq!(heard.len(), 1, "{heard:?}");
    let (channel, message) = &heard[0];
    assert_eq!(
        channel, &second_channel,
        "the release named the new head, on its engine's channel"
    );
    let (name, grant) = message.split_at(16);
    assert_eq!(name, second, "{message}");
    assert_eq!(second.len(), 16);
    assert!(
        grant.len() == 17 && grant.starts_with('g'),
        "a grant: {message}"
    );
    assert!(
        second
            .bytes()
            .chain(grant[1..].bytes())
            .all(|b| b.is_ascii_hexdigit()),
        "digests, not a value: {message}"
    );
    for t in tasks {
        t.await.unwrap();
    }
    let elapsed = start.elapsed();
    let attempts = attempts.lock().unwrap().clone();
    eprintln!("{waiters} hand-overs in {elapsed:?}, attempts {attempts:?}");
    // Every hand-over was a wake-up, none waited out the 2 s pause.
    assert!(elapsed < PAUSE, "{waiters} hand-overs took {elapsed:?}");
    // Enqueue, the subscription's first wake, the wake as head: the last of 8 would need 9 or
    // more if every release woke everyone.
    assert!(
        attempts.iter().all(|&a| a <= 4),
        "woken by releases that named another waiter: {attempts:?}"
    );
    // A release hands the key over: a head granted by the release's messages holds the lock
    // without a round of its own (its enqueue was its only one). At least one: under load a
    // message can come after the head stopped counting, and its own round then takes the key.
    assert!(
        attempts.contains(&1),
        "granted by the releases' messages: {attempts:?}"
    );
    // The last release returned at a majority: the last node may still be running it.
    let drained = || {
        cluster
            .iter()
            .all(|node| queued(node, resource) == 0 && head_name(node, resource).is_empty())
    };
    assert!(crate::common::eventually(Duration::from_secs(2), drained).await);
}

/// A release while this engine's subscriber connections are down publishes into the void: once
/// they are back, their re-sent subscriptions wake the waiters, so a queued waiter (which sleeps a
/// quarter TTL, 2.5 s here, between rounds) gets the lock at the reconnect, not at its keepalive.
#[tokio::test]
async fn a_waiter_whose_subscriber_reconnected_is_woken_at_once() {
    let cluster = nodes(3);
    let (holding, waiting) = (engine(urls(&cluster)).await, engine(urls(&cluster)).await);
    let holder = holding.acquire_fair("gap", TTL).await.unwrap();
    let waiter = tokio::spawn(async move {
        let lock = waiting.acquire_fair("gap", TTL).await.unwrap();
        let got = Instant::now();
        waiting.release(lock).await.unwrap();
        got
    });
    let queued = crate::common::eventually(Duration::from_secs(3), || {
        cluster
            .iter()
            .all(|n| crate::common::fair_queued(n, "gap") == 2)
    })
    .await;
    assert!(queued);
    // Let the waiter's subscriptions be active, then cut every subscriber connection.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for n in &cluster {
        n.cmd_str(&["CLIENT", "KILL", "TYPE", "pubsub"]);
    }
    holding.release(holder).await.unwrap();
    let released = Instant::now();
    let got = waiter.await.unwrap();
    assert!(
        got - released < Duration::from_millis(1500),
        "got the lock {:?} after the release",
        got - released
    );
}
