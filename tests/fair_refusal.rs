//! The fair lock's enqueue refusal on a real node, script by script: `ENQUEUE` adds a waiter only
//! as the tail of the live queue. Where a live entry ranks after `(ticket, waiter)` it answers `R`,
//! keeps no entry of the waiter's (a stale one of an earlier place goes too) and no key of its own,
//! and still wakes the head when it leaves the key free. An expired entry refuses nobody. The
//! argument that needs this is in `src/kinds/fair.rs`; `tests/fair_ticket_window.rs` shows its effect.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::RedisNode;

const LOCK: &[u8] = b"redlock:{r}";
const QUEUE: &[u8] = b"redlock:{r}:fair:q";
const EXP: &[u8] = b"redlock:{r}:fair:exp";
/// An expiry far past any test's end, on the node's millisecond clock.
const LIVE: &[u8] = b"99999999999999";

/// `ENQUEUE` as the engine sends it, by its source (the one whose refusal answers `R`).
fn enqueue(node: &RedisNode, waiter: &[u8], ticket: u64) -> String {
    let (source, _) = redlock_engine::__private::all_scripts()
        .into_iter()
        .find(|(s, _)| s.contains("return 'R'"))
        .expect("the enqueue script");
    let ticket = ticket.to_string();
    node.cmd(&[
        b"EVAL",
        source.as_bytes(),
        b"3",
        LOCK,
        QUEUE,
        EXP,
        waiter,
        b"10000",
        ticket.as_bytes(),
    ])
}

fn queued(node: &RedisNode, waiter: &[u8]) -> (String, String) {
    (
        node.cmd(&[b"ZSCORE", QUEUE, waiter]),
        node.cmd(&[b"ZSCORE", EXP, waiter]),
    )
}

fn nil() -> String {
    "nil".into()
}

/// A raw subscriber on the lock key's channel, confirmed before it is returned.
fn subscribe(node: &RedisNode) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", node.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(b"*2\r\n$9\r\nSUBSCRIBE\r\n$11\r\nredlock:{r}\r\n")
        .unwrap();
    read_until(&mut s, ":1\r\n");
    s
}

fn read_until(s: &mut TcpStream, needle: &str) -> String {
    let mut buf = Vec::new();
    while !String::from_utf8_lossy(&buf).contains(needle) {
        let mut chunk = [0u8; 1024];
        let n = s.read(&mut chunk).expect("a message within 2 s");
        assert!(n > 0, "subscriber closed");
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

#[test]
fn an_enqueue_that_would_not_be_the_tail_is_refused_and_leaves_nothing() {
    let node = RedisNode::start();
    // A live waiter with ticket 5; equal tickets rank by the waiter's bytes, "w-early" first.
    node.cmd(&[b"ZADD", QUEUE, b"5", b"w-later"]);
    node.cmd(&[b"ZADD", EXP, LIVE, b"w-later"]);
    let mut sub = subscribe(&node);
    let head = node.cmd(&[
        b"EVAL",
        b"return string.sub(redis.sha1hex(ARGV[1]), 1, 16)",
        b"0",
        b"w-later",
    ]);

    // Ranks before a live entry: refused, not added, and the free key wakes the head.
    assert_eq!(enqueue(&node, b"w-early", 5), "R");
    assert_eq!(queued(&node, b"w-early"), (nil(), nil()));
    read_until(&mut sub, &head);

    // A stale entry of an earlier place (ticket 1, the head) and a key of ours left by a lost
    // unlock: both go with the refusal, so neither grants us nor keeps the real head waiting.
    node.cmd(&[b"ZADD", QUEUE, b"1", b"w-early"]);
    node.cmd(&[b"ZADD", EXP, LIVE, b"w-early"]);
    node.cmd(&[b"SET", LOCK, b"w-early"]);
    assert_eq!(enqueue(&node, b"w-early", 4), "R");
    assert_eq!(queued(&node, b"w-early"), (nil(), nil()));
    assert!(!node.exists(LOCK), "a key of the refused waiter stayed");
    read_until(&mut sub, &head);

    // As the tail it is added (queued behind the head, not granted).
    assert_eq!(enqueue(&node, b"w-early", 6), "Q");
    assert_eq!(node.cmd(&[b"ZSCORE", QUEUE, b"w-early"]), "6");

    // An expired entry ranking after ours refuses nobody: it is pruned first.
    node.cmd(&[b"ZADD", QUEUE, b"9", b"w-dead"]);
    node.cmd(&[b"ZADD", EXP, b"1", b"w-dead"]);
    assert_eq!(enqueue(&node, b"w-new", 7), "Q");
    assert_eq!(queued(&node, b"w-dead"), (nil(), nil()));

    // Alone in the queue with the key free: added and granted, as before.
    node.cmd(&[b"DEL", QUEUE, EXP]);
    assert_eq!(enqueue(&node, b"w-alone", 1), "G");
    assert_eq!(node.cmd(&[b"GET", LOCK]), "w-alone");
}
