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

/// A take-over of the waiter `name` with `value`, waiting since `since` µs.
fn take(node: &testkit::RedisNode, value: &str, name: &str, since: &str) -> String {
    eval(node, &TAKE_OVER, &[value, "5000", name, "5000", since, "0"])
}

/// [`take`] after the wait changed its value (its entries of earlier values are swept).
fn take_swept(node: &testkit::RedisNode, value: &str, name: &str, since: &str) -> String {
    eval(node, &TAKE_OVER, &[value, "5000", name, "5000", since, "1"])
}

/// The names of the list's entries, in order (an entry is `<name>:<ttl>:<value>`).
fn waiters(node: &testkit::RedisNode) -> String {
    let entries = node.cmd_str(&["ZRANGE", "k:wait", "0", "-1"]);
    let names: Vec<&str> = entries
        .split_whitespace()
        .map(|e| e.split(':').next().unwrap_or(e))
        .collect();
    names.join(" ")
}

#[test]
fn a_release_reserves_the_key_for_the_first_waiter_and_only_it_takes_it() {
    let node = testkit::RedisNode::start();
    assert_eq!(node.cmd_str(&["SET", "k", "holder"]), "OK");
    // Two waiters queue by when they began waiting, not by when they arrive; a second loss keeps
    // the older place.
    assert_eq!(take(&node, "v22", "22", "200"), "-1");
    assert_eq!(take(&node, "v11", "11", "100"), "-1");
    assert_eq!(take(&node, "v11", "11", "300"), "-1");
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
fn a_lost_take_over_steps_back_and_its_next_value_sweeps_the_old_entries() {
    let node = testkit::RedisNode::start();
    // Granted here (the key was free), lost elsewhere: our value goes; the next take-over, with
    // the wait's next value, queues at the same place, ahead of a later waiter.
    assert_eq!(take(&node, "mine", "11", "100"), "1");
    node.cmd_str(&["ZADD", "k:wait", "200", "22"]);
    assert_eq!(eval(&node, &STEP_BACK, &["mine", "0", "11"]), "1");
    assert!(!node.exists(b"k"));
    // A step back of an old value never touches a later one (a copy that lands late).
    node.cmd_str(&["SET", "k", "mine2"]);
    assert_eq!(eval(&node, &STEP_BACK, &["mine", "0", "11"]), "-1");
    assert_eq!(node.cmd_str(&["GET", "k"]), "mine2");
    node.cmd_str(&["DEL", "k"]);
    // An entry of the old value left where the round was refused: the next value's take-over
    // sweeps it (same name, TTL and place), whatever its value.
    node.cmd_str(&["ZADD", "k:wait", "100", "11:5000:mine"]);
    node.cmd_str(&["SET", "k", "holder"]);
    assert_eq!(take_swept(&node, "mine2", "11", "100"), "-1");
    assert_eq!(
        node.cmd_str(&["ZRANGE", "k:wait", "0", "-1"]),
        "11:5000:mine2 22"
    );
    // Named by a release for that attempt: the key stays reserved for us instead.
    node.cmd_str(&["SET", "k", "mine2"]);
    assert_eq!(eval(&node, &STEP_BACK, &["mine2", "5000", "11"]), "1");
    assert_eq!(node.cmd_str(&["GET", "k"]), "r11");
    // Set (the reservation is ours), the take-over takes out every entry of the wait.
    node.cmd_str(&["ZADD", "k:wait", "100", "11:5000:mine"]);
    assert_eq!(take_swept(&node, "mine3", "11", "100"), "22");
    assert_eq!(waiters(&node), "22");
    // An earlier epoch of the wait's value (the same but for a lower last byte: a release granted
    // its entry) is the wait's own: the take-over takes its place; a later epoch's is not.
    node.cmd_str(&["SET", "k", "wait0"]);
    assert_eq!(take(&node, "wait1", "11", "100"), "22");
    assert_eq!(node.cmd_str(&["GET", "k"]), "wait1");
    node.cmd_str(&["SET", "k", "wait2"]);
    assert_eq!(take(&node, "wait1", "11", "100"), "-1");
    assert_eq!(node.cmd_str(&["GET", "k"]), "wait2");
    // Someone else's value is never touched.
    node.cmd_str(&["SET", "k", "theirs"]);
    assert_eq!(eval(&node, &STEP_BACK, &["mine3", "0", "11"]), "-1");
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

/// A connection subscribed to `channel` (raw RESP over TCP: the test needs nothing more).
fn subscriber(node: &testkit::RedisNode, channel: &str) -> std::net::TcpStream {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(node.addr()).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let cmd = format!(
        "*2\r\n$9\r\nSUBSCRIBE\r\n${}\r\n{channel}\r\n",
        channel.len()
    );
    conn.write_all(cmd.as_bytes()).unwrap();
    let mut confirmed = [0u8; 256];
    let n = conn.read(&mut confirmed).unwrap();
    assert!(String::from_utf8_lossy(&confirmed[..n]).contains("subscribe"));
    conn
}

/// What `conn` heard next, as text.
fn heard(conn: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    let mut buf = [0u8; 512];
    let n = conn.read(&mut buf).unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn a_release_grants_the_key_to_a_listening_waiter_and_says_so_on_its_channel() {
    let node = testkit::RedisNode::start();
    node.cmd_str(&["SET", "k", "holder"]);
    assert_eq!(take(&node, "v22", "22", "200"), "-1");
    assert_eq!(take(&node, "v11", "11", "100"), "-1");
    let mut first = subscriber(&node, "k:h:11");
    let _second = subscriber(&node, "k:h:22");
    // The first waiter listens: the key becomes its value for its TTL, no round of its own.
    assert_eq!(eval(&node, &RELEASE_HANDOFF, &["holder", "30"]), "2");
    assert_eq!(node.cmd_str(&["GET", "k"]), "v11");
    let pttl: u64 = node.cmd_str(&["PTTL", "k"]).parse().unwrap();
    assert!(
        pttl > 4000,
        "the entry's TTL, not the reservation's: {pttl}"
    );
    // `g` and the entry's digest, as `Entry::grant_message` computes it (checked below).
    let digest = sha1_smol::Sha1::from("11:5000:v11").digest().to_string();
    let message = format!("g{}", &digest[..16]);
    assert!(heard(&mut first).contains(&message), "{message}");
    // Its take-over finds its value: refreshed, granted, its entry gone.
    assert_eq!(take(&node, "v11", "11", "100"), "22");
    assert_eq!(waiters(&node), "22");
    // Released to the named next one, granted too; an entry of the releaser's own value never is.
    assert_eq!(eval(&node, &RELEASE_TO, &["v11", "5000", "22"]), "2");
    assert_eq!(node.cmd_str(&["GET", "k"]), "v22");
    node.cmd_str(&["ZADD", "k:wait", "300", "33:5000:v22"]);
    assert_eq!(eval(&node, &RELEASE_HANDOFF, &["v22", "30"]), "2");
    assert_eq!(node.cmd_str(&["GET", "k"]), "r33");
    // Unmark without sweep takes out the wait's entry; with it, all of the wait's entries (its
    // name, TTL and place), whatever their values.
    node.cmd_str(&["ZADD", "k:wait", "400", "44:5000:x"]);
    assert_eq!(eval(&node, &UNMARK, &["x", "44", "5000", "400", "0"]), "1");
    assert_eq!(waiters(&node), "");
    node.cmd_str(&[
        "ZADD",
        "k:wait",
        "400",
        "44:5000:a",
        "400",
        "44:5000:b",
        "400",
        "44:6000:c",
        "400",
        "55:5000:d",
    ]);
    assert_eq!(eval(&node, &UNMARK, &["x", "44", "5000", "400", "1"]), "1");
    assert_eq!(
        node.cmd_str(&["ZRANGE", "k:wait", "0", "-1"]),
        "44:6000:c 55:5000:d"
    );
}

#[test]
fn a_waiter_expects_the_grant_message_the_scripts_publish() {
    let value = LockValue::random().unwrap();
    let entry = Entry {
        name: 11,
        value,
        ttl_ms: 5000,
        since_us: 100,
    };
    let mut text = b"11:5000:".to_vec();
    text.extend_from_slice(value.as_bytes());
    let digest = sha1_smol::Sha1::from(&text).digest().to_string();
    assert_eq!(
        entry.grant_message(),
        format!("g{}", &digest[..16]).as_bytes()
    );
}

#[test]
fn an_entry_whose_ttl_set_would_refuse_is_reserved_not_announced() {
    // The grant is published before its `SET`: an entry `SET PX` refuses must be neither, or a
    // waiter counting the message would claim a node whose key it does not hold.
    for ttl in ["0", "99999999999999999999"] {
        let node = testkit::RedisNode::start();
        node.cmd_str(&["SET", "k", "holder"]);
        let entry = format!("11:{ttl}:v11");
        node.cmd_str(&["ZADD", "k:wait", "100", &entry]);
        let mut waiter = subscriber(&node, "k:h:11");
        assert_eq!(eval(&node, &RELEASE_HANDOFF, &["holder", "30"]), "2");
        assert_eq!(node.cmd_str(&["GET", "k"]), "r11", "TTL {ttl}");
        let digest = sha1_smol::Sha1::from(entry.as_str()).digest().to_string();
        let said = heard(&mut waiter);
        assert!(
            said.contains("11") && !said.contains(&format!("g{}", &digest[..16])),
            "TTL {ttl}: woken by name, no grant: {said:?}"
        );
    }
}
