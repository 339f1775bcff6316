//! A hostile node cannot abort the process, exhaust its memory, or cast a vote with a malformed reply.
//!
//! Every case puts one hostile node (`testkit::hostile`) beside real redis-servers and checks:
//! - with two healthy nodes, the lock is still granted (by them) and released;
//! - with one healthy node, `try_acquire` is refused (a false "yes" from the hostile node would grant
//!   it), and the hostile node's failure names it and what it broke;
//! - the process survives, and its resident memory grew by less than [`MAX_GROWTH`] (generous: the
//!   tests of this binary run in parallel threads and share the process).
//!
//! The fred transport's behaviour with the same node is in `tests/it/hostile_fred.rs`.

use std::time::Duration;

use crate::common::{attempt, build, nodes, quick, RedisNode};
use redlock_engine::{LockError, Redlock};
use testkit::hostile::{bulk, rss, Action, Hostile};

const MAX_GROWTH: usize = 64 << 20;
const TTL: Duration = Duration::from_secs(5);

/// The whole check for one hostile node; `expect` is a phrase of its failure's message.
async fn survives(bad: Hostile, expect: &str) {
    let before = rss();
    let healthy = nodes(2);
    let urls = vec![healthy[0].url(), healthy[1].url(), bad.url()];
    let e = engine(urls).await;
    let lock = e
        .try_acquire(b"res-majority", TTL)
        .await
        .unwrap_or_else(|err| panic!("the healthy majority grants the lock: {err}"));
    assert!(healthy.iter().all(|n| n.exists(b"redlock:{res-majority}")));
    e.release(lock)
        .await
        .expect("released by the healthy majority");
    refused_naming(&healthy[0], &bad, expect).await;
    let grown = rss().saturating_sub(before);
    eprintln!("{expect}: resident memory grew by {} KiB", grown >> 10);
    assert!(grown < MAX_GROWTH, "resident memory grew by {grown} bytes");
}

/// [`survives`] once for each of `replies`, each sent by a fresh node that `hostile` makes with it
/// (the cases of one failure phrase).
async fn each_survives(hostile: impl Fn(Action) -> Hostile, replies: &[&[u8]], expect: &str) {
    for reply in replies {
        survives(hostile(Action::Send(reply.to_vec())), expect).await;
    }
}

/// One healthy node and the hostile one: a majority needs the hostile node's vote, so the lock must be
/// refused, with the hostile node's failure in the error.
async fn refused_naming(healthy: &RedisNode, bad: &Hostile, expect: &str) {
    let e = engine(vec![healthy.url(), bad.url()]).await;
    match e.try_acquire(b"res-pair", TTL).await {
        Ok(_) => panic!("granted with the hostile node's vote"),
        // Decided as soon as the hostile node fails: the healthy node's vote may not be counted.
        Err(LockError::QuorumNotReached { failures, .. }) => {
            let (index, cause) = &failures[0];
            assert_eq!(*index, 1, "the failure is the hostile node's (index 1)");
            let text = cause.to_string();
            assert!(text.contains(expect), "{text:?} lacks {expect:?}");
            // Connection-level errors carry the address; a wrongly typed reply is named by the index
            // (`QuorumNotReached` prints "node 1: ..."), and a dropped connection is ConnectionLost.
            let per_reply =
                text.contains("unexpected reply type") || text.contains("connection lost");
            assert!(
                per_reply || text.contains(&bad.name()),
                "{text:?} does not name {}",
                bad.name()
            );
        }
        Err(other) => panic!("expected QuorumNotReached, got {other}"),
    }
}

/// An engine with a per-node deadline long enough for a reply dripped byte by byte on a busy machine.
async fn engine(urls: Vec<String>) -> Redlock {
    build(quick(urls, 3).node_timeout(Duration::from_secs(1))).await
}

fn stream(header: &[u8], fill: &[u8]) -> Action {
    Action::Stream {
        header: header.to_vec(),
        fill: fill.to_vec(),
        total: 320 << 20,
    }
}

#[tokio::test]
async fn deep_nesting_is_refused_without_recursion() {
    let deep = b"*1\r\n".repeat(100_000);
    survives(
        Hostile::on_lock_commands(Action::Send(deep)),
        "nested deeper than 8",
    )
    .await;
}

#[tokio::test]
async fn oversized_replies_are_refused_before_buffering() {
    for (header, fill) in [
        // A huge declared bulk, then a stream.
        (&b"$2000000000\r\n"[..], &b"x"[..]),
        // A huge declared array.
        (b"*2000000000\r\n", b":1\r\n"),
        // An endless status line: nothing declared, the bound on buffered input must stop it.
        (b"+", b"x"),
    ] {
        let bad = Hostile::on_lock_commands(stream(header, fill));
        survives(bad, "larger than max_reply_size").await;
    }
}

#[tokio::test]
async fn negative_and_non_numeric_lengths_are_malformed() {
    let replies: [&[u8]; 5] = [b"$-5\r\n", b"*-3\r\n", b"$abc\r\n", b"*1x\r\n", b":12z\r\n"];
    each_survives(Hostile::on_lock_commands, &replies, "malformed").await;
}

#[tokio::test]
async fn resp3_pushes_are_malformed_on_a_resp2_connection() {
    let mut push = b">3\r\n".to_vec();
    push.extend(bulk(b"message"));
    push.extend(bulk(b"redlock:{res-pair}"));
    push.extend(bulk(b""));
    survives(Hostile::on_lock_commands(Action::Send(push)), "RESP3").await;
}

#[tokio::test]
async fn a_reply_split_at_every_byte_then_closed() {
    // A wrong-typed reply dripped byte by byte is still read whole, then refused for its type.
    let bad = Hostile::on_lock_commands(Action::DripThenClose(bulk(b"nonsense")));
    survives(bad, "unexpected reply type bulk string").await;
    // A reply cut short by the close is a lost connection, not a vote.
    let bad = Hostile::on_lock_commands(Action::DripThenClose(b"$10\r\nabc".to_vec()));
    survives(bad, "connection lost").await;
}

#[tokio::test]
async fn a_node_that_half_closes_fails_its_requests() {
    survives(
        Hostile::on_lock_commands(Action::HalfClose),
        "connection lost",
    )
    .await;
}

#[tokio::test]
async fn replies_nobody_asked_for_close_the_connection() {
    // Two replies to one command: the second has no request.
    let bad = Hostile::on_lock_commands(Action::Send(b"+OK\r\n+OK\r\n".to_vec()));
    survives(bad, "no request outstanding").await;
}

#[tokio::test]
async fn a_node_out_of_step_from_the_start_reconnects_with_backoff() {
    // Extra replies in the handshake itself: the connection is refused, and reconnects back off.
    let bad = Hostile::on("SCRIPT", Action::Send(b"+OK\r\n+OK\r\n".to_vec()));
    let connections = bad.connections.clone();
    let healthy = nodes(1);
    let e = engine(vec![healthy[0].url(), bad.url()]).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let made = connections.load(std::sync::atomic::Ordering::Relaxed);
    // 20 ms doubling to 2 s: about 7 in 1.5 s (plus jitter); a storm would be ~50.
    assert!((1..=12).contains(&made), "{made} connections in 1.5 s");
    drop(e);
    refused_naming(&healthy[0], &bad, "handshake").await;
}

/// Wrong reply types for every lock command: a failure naming the command and type, never a vote.
#[tokio::test]
async fn wrong_types_to_acquire_are_failures() {
    let replies: [&[u8]; 4] = [b":1\r\n", b"*1\r\n:1\r\n", b"$2\r\nOK\r\n", b"+QUEUED\r\n"];
    let on_set = |action| Hostile::on("SET", action);
    each_survives(on_set, &replies, "SET NX PX: unexpected reply type").await;
}

#[tokio::test]
async fn wrong_types_to_scripts_are_failures() {
    // Release, extend and every other script answer integers (or bulk strings for the fenced ones).
    for (reply, phrase) in [
        (&b"+OK\r\n"[..], "unexpected reply type status OK"),
        (b"$1\r\n1\r\n", "unexpected reply type bulk string"),
        (b"*0\r\n", "unexpected reply type array"),
        (b":7\r\n", "integer 7 is none of its answers"),
    ] {
        let healthy = nodes(1);
        let bad = Hostile::on("EVALSHA", Action::Send(reply.to_vec()));
        let e = engine(vec![healthy[0].url(), bad.url()]).await;
        // Multi-resource acquire is a script: refused without the hostile node's vote.
        match attempt(e.lock_many([&b"m1"[..], b"m2"]), TTL).await {
            Err(LockError::QuorumNotReached { failures, .. }) => {
                assert!(failures[0].1.to_string().contains(phrase), "{failures:?}");
            }
            other => panic!("multi acquire: {other:?}"),
        }
        // Fenced acquire expects a bulk `+<counter>`: an integer or status is not one.
        match attempt(e.lock(b"f").fenced(), TTL).await {
            Err(LockError::QuorumNotReached { failures, .. }) => {
                assert!(
                    failures[0].1.to_string().contains("fenced acquire"),
                    "{failures:?}"
                );
            }
            other => panic!("fenced acquire: {other:?}"),
        }
    }
}

#[tokio::test]
async fn wrong_types_to_release_and_extend_never_change_the_verdict() {
    // SET answered like Redis, the scripts with a bulk "-1" (the integer -1 would mean "taken"):
    // release and extend must not say NotOwner or AlreadyExpired on it.
    let bad = Hostile::on("EVALSHA", Action::Send(bulk(b"-1")));
    let healthy = nodes(2);
    let e = engine(vec![healthy[0].url(), healthy[1].url(), bad.url()]).await;
    let mut lock = e.try_acquire(b"re", TTL).await.expect("granted");
    e.extend(&mut lock, TTL)
        .await
        .expect("extended by the healthy majority");
    e.release(lock)
        .await
        .expect("released by the healthy majority");
    // One healthy node and the hostile one (which answered SET with +OK): neither extend nor release
    // can be confirmed, and the error is the node's failure.
    let pair = engine(vec![healthy[0].url(), bad.url()]).await;
    let mut lock = pair.try_acquire(b"re2", TTL).await.expect("granted");
    let check = |r: Result<(), LockError>| match r {
        Err(LockError::QuorumNotReached { failures, .. }) => {
            let text = failures[0].1.to_string();
            assert!(
                text.contains("lock script: unexpected reply type bulk string"),
                "{text}"
            );
        }
        other => panic!("hostile reply changed the verdict: {other:?}"),
    };
    check(pair.extend(&mut lock, TTL).await);
    check(pair.release(lock).await);
}

#[tokio::test]
async fn wrong_types_in_the_handshake_fail_the_connect() {
    for (verb, reply, phrase) in [
        (
            "SCRIPT",
            &b":1\r\n"[..],
            "SCRIPT LOAD: unexpected reply type integer",
        ),
        (
            "SCRIPT",
            b"$40\r\n0000000000000000000000000000000000000000\r\n",
            "digest mismatch",
        ),
        ("SCRIPT", b"*1\r\n", "handshake"),
        ("AUTH", b":1\r\n", "AUTH: unexpected reply type integer"),
        (
            "AUTH",
            b"$2\r\nOK\r\n",
            "AUTH: unexpected reply type bulk string",
        ),
    ] {
        let healthy = nodes(1);
        let bad = Hostile::on(verb, Action::Send(reply.to_vec()));
        let url = format!("redis://:secret@127.0.0.1:{}", bad.port);
        let e = engine(vec![healthy[0].url(), url]).await;
        match e.try_acquire(b"h", TTL).await {
            Err(LockError::QuorumNotReached { failures, .. }) => {
                let text = failures[0].1.to_string();
                assert!(
                    text.contains(phrase) && text.contains(&bad.name()),
                    "{text}"
                );
            }
            other => panic!("{verb}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_wrong_info_reply_fails_the_connect_with_quarantine_on() {
    let healthy = nodes(1);
    let bad = Hostile::on("INFO", Action::Send(b":1\r\n".to_vec()));
    let e = crate::common::builder()
        .quarantine(true)
        .nodes(vec![healthy[0].url(), bad.url()])
        .connect_timeout(Duration::from_millis(500))
        .build()
        .await
        .unwrap();
    // The fresh healthy node is quarantined and the hostile one never passes its handshake: it
    // keeps being refused (several connects) and never connects.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(e.connected_nodes(), 1);
    assert!(bad.connections.load(std::sync::atomic::Ordering::Relaxed) >= 2);
    assert!(e.try_acquire(b"i", TTL).await.is_err());
}

#[tokio::test]
async fn a_hostile_subscriber_connection_is_closed_and_backs_off() {
    // SUBSCRIBE answered with deep nesting, then with a wrong type: the lock path is unaffected.
    for reply in [b"*1\r\n".repeat(100_000), b":1\r\n".to_vec()] {
        let before = rss();
        let bad = Hostile::on("SUBSCRIBE", Action::Send(reply));
        let connections = bad.connections.clone();
        let healthy = nodes(2);
        let urls = vec![healthy[0].url(), healthy[1].url(), bad.url()];
        let e = engine(urls.clone()).await;
        let held = e.try_acquire(b"sub", TTL).await.expect("granted");
        // A waiter in another engine subscribes on every node (the hostile one too) while it waits.
        let other = crate::common::builder()
            .nodes(urls)
            .node_timeout(Duration::from_secs(1))
            .retry(100, Duration::from_millis(20), Duration::ZERO)
            .build()
            .await
            .unwrap();
        let waiter = tokio::spawn(async move { other.acquire(b"sub", TTL).await.map(|_| ()) });
        tokio::time::sleep(Duration::from_millis(1000)).await;
        e.release(held).await.unwrap();
        waiter
            .await
            .unwrap()
            .expect("the waiter gets the lock after the release");
        let made = connections.load(std::sync::atomic::Ordering::Relaxed);
        assert!(made <= 16, "{made} connections: no backoff");
        let grown = rss().saturating_sub(before);
        assert!(grown < MAX_GROWTH, "resident memory grew by {grown} bytes");
    }
}

#[tokio::test]
async fn max_reply_size_is_validated_and_applied() {
    let healthy = nodes(1);
    for bad_size in [0, 1000, 2 << 30] {
        let err = crate::common::builder()
            .nodes(vec![healthy[0].url()])
            .max_reply_size(bad_size)
            .build()
            .await
            .unwrap_err();
        assert!(matches!(err, LockError::InvalidConfig(ref why) if why.contains("max_reply_size")));
    }
    // A 100 KiB reply is refused under a 64 KiB bound.
    let bad = Hostile::on("SET", Action::Send(bulk(&vec![b'x'; 100 << 10])));
    let e = crate::common::builder()
        .nodes(vec![healthy[0].url(), bad.url()])
        .max_reply_size(64 << 10)
        .build()
        .await
        .unwrap();
    match e.try_acquire(b"sz", TTL).await {
        Err(LockError::QuorumNotReached { failures, .. }) => {
            assert!(
                failures[0].1.to_string().contains("(65536 bytes)"),
                "{failures:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}
