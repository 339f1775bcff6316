//! The hand-off's scripts on a real node: waiters queue by the time they began waiting whatever
//! order they arrive in, the first alone may take a reserved key, a reservation expires by itself,
//! a lost take-over steps back to its place, and an older client's string mark still reads as a
//! waiter.

use super::*;
use crate::protocol::scripts::RELEASE_NOTIFY;

fn eval(node: &testkit::RedisNode, script: &Script, args: &[&str]) -> String {
    let mut cmd: Vec<&[u8]> = vec![b"EVAL", script.source.as_bytes(), b"1", b"k"];
    cmd.extend(args.iter().map(|a| a.as_bytes()));
    node.cmd(&cmd)
}

/// A take-over of the waiter `name`, waiting since `since` µs.
fn take(node: &testkit::RedisNode, value: &str, name: &str, since: &str) -> String {
    eval(node, &TAKE_OVER, &[value, "5000", name, "5000", since])
}

fn waiters(node: &testkit::RedisNode) -> String {
    node.cmd_str(&["ZRANGE", "k:wait", "0", "-1"])
}

#[test]
fn a_release_reserves_the_key_for_the_first_waiter_and_only_it_takes_it() {
    let node = testkit::RedisNode::start();
    assert_eq!(node.cmd_str(&["SET", "k", "holder"]), "OK");
    // Two waiters queue by when they began waiting, not by when they arrive; a second loss keeps
    // the older place.
    assert_eq!(take(&node, "v", "22", "200"), "-1");
    assert_eq!(take(&node, "v", "11", "100"), "-1");
    assert_eq!(take(&node, "v", "11", "300"), "-1");
    assert_eq!(waiters(&node), "11 22");
    // Not the owner: nothing happens.
    assert_eq!(eval(&node, &RELEASE_HANDOFF, &["other", "5000"]), "-1");
    assert_eq!(eval(&node, &RELEASE_HANDOFF, &["holder", "5000"]), "2");
    assert_eq!(node.cmd_str(&["GET", "k"]), "r11", "reserved for the first");
    // SET NX and the other waiter are refused; the named one takes it and leaves the list.
    assert_eq!(node.cmd_str(&["SET", "k", "x", "NX", "PX", "5000"]), "nil");
    assert_eq!(take(&node, "v22", "22", "200"), "-1");
    assert_eq!(
        take(&node, "v11", "11", "100"),
        "22",
        "granted, naming the next waiter"
    );
    assert_eq!(node.cmd_str(&["GET", "k"]), "v11");
    assert_eq!(waiters(&node), "22");
    // Released to the waiter the grant named, on every node alike; the last one knows nobody.
    assert_eq!(eval(&node, &RELEASE_TO, &["v11", "5000", "22"]), "2");
    assert_eq!(node.cmd_str(&["GET", "k"]), "r22");
    assert_eq!(waiters(&node), "");
    assert_eq!(take(&node, "v22", "22", "200"), "1");
    assert_eq!(
        eval(&node, &RELEASE_TO, &["v11", "5000", "22"]),
        "-1",
        "not ours"
    );
    assert_eq!(eval(&node, &RELEASE_HANDOFF, &["v22", "5000"]), "1");
    assert!(!node.exists(b"k"));
    assert_eq!(eval(&node, &RELEASE_HANDOFF, &["v22", "5000"]), "0");
}

#[test]
fn a_lost_take_over_steps_back_to_its_place() {
    let node = testkit::RedisNode::start();
    // Granted here (the key was free), lost elsewhere: our value goes, our name comes back at
    // its old place, ahead of a later waiter.
    assert_eq!(take(&node, "mine", "11", "100"), "1");
    node.cmd_str(&["ZADD", "k:wait", "200", "22"]);
    assert_eq!(waiters(&node), "22");
    let args = |reserve: &'static str| ["mine", reserve, "11", "5000", "100"];
    assert_eq!(eval(&node, &STEP_BACK, &args("0")), "1");
    assert!(!node.exists(b"k"));
    assert_eq!(waiters(&node), "11 22");
    // Named by a release for that attempt: the key stays reserved for us instead.
    assert_eq!(take(&node, "mine2", "11", "100"), "22");
    let named = ["mine2", "5000", "11", "5000", "100"];
    assert_eq!(eval(&node, &STEP_BACK, &named), "1");
    assert_eq!(node.cmd_str(&["GET", "k"]), "r11");
    // The reservation is our place on this node: no name beside it (a release took it out), so
    // the take-over it lets in has none to remove.
    assert_eq!(waiters(&node), "22");
    assert_eq!(take(&node, "mine3", "11", "100"), "22");
    assert_eq!(waiters(&node), "22");
    // Someone else's value is never touched.
    node.cmd_str(&["SET", "k", "theirs"]);
    assert_eq!(eval(&node, &STEP_BACK, &args("0")), "-1");
    assert_eq!(node.cmd_str(&["GET", "k"]), "theirs");
}

#[test]
fn a_plain_release_wakes_only_the_first_named_waiter() {
    let node = testkit::RedisNode::start();
    node.cmd_str(&["SET", "k", "holder"]);
    take(&node, "v", "33", "100");
    take(&node, "v", "44", "200");
    // Freed for anyone (no reservation), the first name taken out to be woken.
    assert_eq!(eval(&node, &RELEASE_NOTIFY, &["holder"]), "2");
    assert!(!node.exists(b"k"));
    assert_eq!(waiters(&node), "44");
    node.cmd_str(&["SET", "k", "h2"]);
    assert_eq!(eval(&node, &RELEASE_NOTIFY, &["h2"]), "2");
    node.cmd_str(&["SET", "k", "h3"]);
    assert_eq!(eval(&node, &RELEASE_NOTIFY, &["h3"]), "1", "nobody left");
}

#[test]
fn a_reservation_expires_and_a_string_mark_still_wakes() {
    let node = testkit::RedisNode::start();
    node.cmd_str(&["SET", "k", "holder"]);
    take(&node, "v", "33", "100");
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
    assert_eq!(eval(&node, &RELEASE_NOTIFY, &["y"]), "2");
    node.cmd_str(&["SET", "k", "y"]);
    node.cmd_str(&["SET", "k:wait", "1", "PX", "5000"]);
    assert_eq!(take(&node, "v", "44", "100"), "-1");
    assert_eq!(waiters(&node), "44");
}
