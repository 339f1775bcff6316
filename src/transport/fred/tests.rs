//! Tests of the fred transport against a real redis-server.

use super::*;
use crate::algo::value::LockValue;
use crate::protocol::cmd::{Args, Keys};
use crate::protocol::cmd::{Op, Script};
use crate::protocol::scripts::RELEASE;
use ::fred::interfaces::MetricsInterface;
use std::time::Instant;

/// A redis-server on a loopback port, from the test kit (its own data directory, killed and removed
/// on drop), and the port it listens on.
struct Redis(testkit::RedisNode, u16);

impl Redis {
    fn start_on(port: u16) -> Self {
        let node = testkit::RedisNode::try_start_on(port, testkit::NodeSpec::default())
            .expect("redis-server did not start");
        Self(node, port)
    }
    fn cli(&self, args: &[&str]) -> String {
        self.0.cmd_str(args)
    }
}

use testkit::free_port;

fn opts(connect_timeout_ms: u64) -> ConnectOptions {
    ConnectOptions {
        connect_timeout: Duration::from_millis(connect_timeout_ms),
        max_pending: 1024,
        reconnect_min: Duration::from_millis(20),
        reconnect_max: Duration::from_millis(200),
        quarantine: None,
        clock_guard: None,
        tls: None,
        limits: Default::default(),
        scripts: &[],
        coalesce: &[],
        native: true,
    }
}

async fn node(port: u16, connect_timeout_ms: u64) -> FredNode {
    let addr = NodeAddr::parse(&format!("redis://127.0.0.1:{port}")).unwrap();
    FredNode::connect(addr, &opts(connect_timeout_ms)).await
}

fn set(key: &'static [u8], value: LockValue) -> Cmd {
    Cmd::SetNxPx {
        key: Bytes::from_static(key),
        value,
        ttl_ms: 10_000,
    }
}

fn script(script: &'static Script, key: &'static [u8], value: LockValue) -> Cmd {
    Cmd::Script {
        script,
        keys: Keys::One(Bytes::from_static(key)),
        value,
        args: Args::NONE,
    }
}

#[tokio::test] // current-thread: the spawned command tasks must still complete
async fn commands_scripts_and_noscript_fallback() {
    let redis = Redis::start_on(free_port());
    let n = node(redis.1, 2000).await;
    assert!(n.is_connected());
    let (v, other) = (LockValue::random().unwrap(), LockValue::random().unwrap());
    let key: &'static [u8] = b"k\xff\x00\x80"; // not UTF-8
    assert_eq!(n.send(&set(key, v)).await, Ok(Reply::Ok));
    assert_eq!(n.send(&set(key, other)).await, Ok(Reply::Nil));
    // Fresh server: EVALSHA answers NOSCRIPT, the EVAL fallback runs it.
    assert_eq!(
        n.send(&script(&RELEASE, key, other)).await,
        Ok(Reply::Int(-1))
    );
    assert_eq!(n.send(&script(&RELEASE, key, v)).await, Ok(Reply::Int(1)));
    assert_eq!(n.send(&script(&RELEASE, key, v)).await, Ok(Reply::Int(0)));
    assert_eq!(redis.cli(&["SCRIPT", "FLUSH"]), "OK");
    assert_eq!(n.send(&set(key, v)).await, Ok(Reply::Ok));
    assert_eq!(n.send(&script(&RELEASE, key, v)).await, Ok(Reply::Int(1)));
    // Queued now: on this single thread nothing else ran since `send`, yet fred holds the command;
    // its reply is dropped unpolled and it still runs, before the next command.
    drop(n.send(&set(b"fire", v)));
    assert_eq!(n.client.command_queue_len(), 1);
    assert_eq!(
        n.send(&script(&RELEASE, b"fire", v)).await,
        Ok(Reply::Int(1))
    );
    match n.send(&Cmd::InfoServer).await {
        Ok(Reply::Data(d)) => assert!(String::from_utf8_lossy(&d).contains("redis_version")),
        other => panic!("{other:?}"),
    }
    redis.cli(&["RPUSH", "list", "x"]);
    match n.send(&script(&RELEASE, b"list", v)).await {
        Err(NodeError::Server(msg)) => assert!(msg.contains("WRONGTYPE"), "{msg}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn unreachable_node_connects_disconnected_and_fails_fast() {
    let started = Instant::now();
    let n = node(free_port(), 300).await;
    assert!(
        started.elapsed() < Duration::from_millis(1000),
        "{:?}",
        started.elapsed()
    );
    assert!(!n.is_connected());
    let sent = Instant::now();
    // Once the failed connect is reported, the error says why and names the node.
    match n.send(&set(b"k", LockValue::random().unwrap())).await {
        Err(NodeError::Disconnected) => {}
        Err(NodeError::Connect(why)) => assert!(why.contains("127.0.0.1"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(sent.elapsed() < Duration::from_millis(100));
}

/// Loops for about a second, then sets the key: replayed after a reconnect, it would leave the key set.
static SLOW_SET: Script = Script {
    source: "local n = 0 for i = 1, 200000000 do n = n + 1 end \
             redis.call('SET', KEYS[1], ARGV[1]) return 1",
    sha1: "0000000000000000000000000000000000000000",
    resend: true,
    op: Op::Own,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_command_fails_and_is_not_replayed() {
    let port = free_port();
    let mut redis = Redis::start_on(port);
    let n = node(port, 5000).await;
    let pending = n.send(&script(
        &SLOW_SET,
        b"replayed",
        LockValue::random().unwrap(),
    ));
    tokio::time::sleep(Duration::from_millis(300)).await;
    redis.0.kill9(); // mid-script
    assert_eq!(pending.await, Err(NodeError::ConnectionLost));
    drop(redis);
    let redis = Redis::start_on(port);
    let until = Instant::now() + Duration::from_secs(5);
    while !n.is_connected() {
        assert!(Instant::now() < until, "no reconnect");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(redis.cli(&["EXISTS", "replayed"]), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_node_times_out_scripts_too() {
    let redis = Redis::start_on(free_port());
    let n = node(redis.1, 300).await;
    let v = LockValue::random().unwrap();
    assert_eq!(n.send(&set(b"k", v)).await, Ok(Reply::Ok));
    redis.0.freeze();
    let started = Instant::now();
    let (a, b) = tokio::join!(n.send(&script(&RELEASE, b"k", v)), n.send(&set(b"j", v)));
    redis.0.thaw();
    assert_eq!((a, b), (Err(NodeError::Timeout), Err(NodeError::Timeout)));
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_node_stops_its_reconnect_loop() {
    let port = free_port();
    drop(node(port, 100).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let redis = Redis::start_on(port);
    tokio::time::sleep(Duration::from_millis(800)).await; // several reconnect_max periods
    assert_eq!(redis.cli(&["CLIENT", "LIST"]).lines().count(), 1); // only redis-cli itself
}
