//! Tests of the fred transport against a real redis-server.

use super::*;
use crate::algo::value::LockValue;
use crate::protocol::cmd::Script;
use crate::protocol::cmd::{Args, Keys};
use crate::transport::test_scripts::RELEASE;
use ::fred::interfaces::MetricsInterface;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// A redis-server on a free loopback port, killed (by pid) on drop.
struct Redis(Child, u16);

impl Redis {
    fn start_on(port: u16) -> Self {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "no", "--daemonize", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server");
        let until = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < until, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self(child, port)
    }
    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.1.to_string()])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

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
    redis.0.kill().unwrap(); // mid-script
    let _ = redis.0.wait();
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

fn signal(redis: &Redis, sig: &str) {
    let pid = redis.0.id().to_string();
    assert!(Command::new("kill")
        .args([sig, &pid])
        .status()
        .unwrap()
        .success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_node_times_out_scripts_too() {
    let redis = Redis::start_on(free_port());
    let n = node(redis.1, 300).await;
    let v = LockValue::random().unwrap();
    assert_eq!(n.send(&set(b"k", v)).await, Ok(Reply::Ok));
    signal(&redis, "-STOP");
    let started = Instant::now();
    let (a, b) = tokio::join!(n.send(&script(&RELEASE, b"k", v)), n.send(&set(b"j", v)));
    signal(&redis, "-CONT");
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
