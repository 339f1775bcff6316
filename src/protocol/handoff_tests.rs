//! The hand-off's scripts on a real node: the oldest waiter alone may take a reserved key, a
//! reservation expires by itself, and an older client's string mark still reads as a waiter.

use super::*;

fn eval(node: &testkit::RedisNode, script: &Script, args: &[&str]) -> String {
    let mut cmd: Vec<&[u8]> = vec![b"EVAL", script.source.as_bytes(), b"1", b"k"];
    cmd.extend(args.iter().map(|a| a.as_bytes()));
    node.cmd(&cmd)
}

#[test]
fn a_release_reserves_the_key_for_the_oldest_waiter_and_only_it_takes_it() {
    let node = testkit::RedisNode::start();
    assert_eq!(node.cmd_str(&["SET", "k", "holder"]), "OK");
    // Two waiters mark themselves by losing a take-over; a second loss does not mark twice.
    for name in ["11", "22", "11"] {
        assert_eq!(eval(&node, &TAKE_OVER, &["v", "5000", name, "5000"]), "-1");
    }
    assert_eq!(node.cmd_str(&["LLEN", "k:wait"]), "2");
    // Not the owner: nothing happens.
    assert_eq!(eval(&node, &RELEASE_HANDOFF, &["other", "5000"]), "-1");
    assert_eq!(eval(&node, &RELEASE_HANDOFF, &["holder", "5000"]), "2");
    assert_eq!(
        node.cmd_str(&["GET", "k"]),
        "r11",
        "reserved for the oldest"
    );
    // SET NX and the other waiter are refused; the named one takes it and leaves the list.
    assert_eq!(node.cmd_str(&["SET", "k", "x", "NX", "PX", "5000"]), "nil");
    assert_eq!(
        eval(&node, &TAKE_OVER, &["v22", "5000", "22", "5000"]),
        "-1"
    );
    assert_eq!(
        eval(&node, &TAKE_OVER, &["v11", "5000", "11", "5000"]),
        "22",
        "granted, naming the next waiter"
    );
    assert_eq!(node.cmd_str(&["GET", "k"]), "v11");
    assert_eq!(node.cmd_str(&["LRANGE", "k:wait", "0", "-1"]), "22");
    // Released to the waiter the grant named, on every node alike; the last one knows nobody.
    assert_eq!(eval(&node, &RELEASE_TO, &["v11", "5000", "22", "1"]), "2");
    assert_eq!(node.cmd_str(&["GET", "k"]), "r22");
    assert_eq!(node.cmd_str(&["LLEN", "k:wait"]), "0");
    assert_eq!(eval(&node, &TAKE_OVER, &["v22", "5000", "22", "5000"]), "1");
    assert_eq!(
        eval(&node, &RELEASE_TO, &["v11", "5000", "22", "1"]),
        "-1",
        "not ours"
    );
    assert_eq!(eval(&node, &RELEASE_HANDOFF, &["v22", "5000"]), "1");
    assert!(!node.exists(b"k"));
    assert_eq!(eval(&node, &RELEASE_HANDOFF, &["v22", "5000"]), "0");
}

#[test]
fn a_reservation_expires_and_a_string_mark_still_wakes() {
    let node = testkit::RedisNode::start();
    node.cmd_str(&["SET", "k", "holder"]);
    eval(&node, &TAKE_OVER, &["v", "5000", "33", "5000"]);
    assert_eq!(eval(&node, &RELEASE_HANDOFF, &["holder", "30"]), "2");
    // The waiter never comes (dead): the key is free again after the reservation.
    std::thread::sleep(std::time::Duration::from_millis(80));
    assert_eq!(node.cmd_str(&["SET", "k", "x", "NX", "PX", "5000"]), "OK");
    // An older client's mark (a string): the release deletes and wakes everyone (answer 2), and a
    // take-over replaces the string by its list.
    node.cmd_str(&["SET", "k:wait", "1", "PX", "5000"]);
    assert_eq!(eval(&node, &RELEASE_HANDOFF, &["x", "5000"]), "2");
    assert!(!node.exists(b"k"));
    node.cmd_str(&["SET", "k", "y"]);
    node.cmd_str(&["SET", "k:wait", "1", "PX", "5000"]);
    assert_eq!(eval(&node, &TAKE_OVER, &["v", "5000", "44", "5000"]), "-1");
    assert_eq!(node.cmd_str(&["LRANGE", "k:wait", "0", "-1"]), "44");
}
