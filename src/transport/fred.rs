//! The fred transport: one fred client per node, configured to keep the [`NodeClient`] contract.
//!
//! fred's defaults would break lock safety, so every one that matters is overridden here:
//! - **No replay.** fred re-sends an in-flight command after a reconnect (`max_command_attempts` defaults
//!   to 3). It is set to 1: a command in flight when the connection drops fails with the connection error
//!   ([`NodeError::ConnectionLost`]) and the quorum logic decides.
//! - **Every command has a deadline.** `with_options` is ignored by `EVAL`/`EVALSHA` (fred issue #353), but
//!   `PerformanceConfig::default_command_timeout` applies to every command (`utils::prepare_command`). A command
//!   that times out is also marked so fred never writes it late (`router::utils::write_command`).
//! - **Queued now, in call order.** fred's command methods are lazy: nothing is queued until the future is
//!   polled. [`FredNode::send`] polls it once on the spot (which puts the command on fred's queue), then spawns
//!   it so `NOSCRIPT` fallback and completion happen even if the caller drops the reply.
//! - **Fail fast while disconnected**, like the pipeline transport: commands are not parked in fred's queue
//!   during a reconnect.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use ::fred::prelude::{
    Client, ClientLike, Config, ConnectionConfig, Error as FredError, ErrorKind, EventInterface,
    Expiration, Key, KeysInterface, LuaInterface, PerformanceConfig, ReconnectPolicy, Server,
    ServerConfig, SetOptions, TcpConfig, Value,
};
use ::fred::types::{ConnectHandle, InfoKind, RespVersion};
use bytes::Bytes;

use super::{Cmd, ConnectOptions, NodeClient, NodeResult, Pending, Reply};
use crate::addr::NodeAddr;
use crate::error::NodeError;

/// One node reached through a fred client.
pub(crate) struct FredNode {
    client: Client,
    addr: NodeAddr,
    /// fred's routing task; aborted on drop so no reconnect loop outlives the node.
    task: Option<ConnectHandle>,
    /// Commands sent and not yet answered, for [`NodeError::Backpressure`].
    in_flight: Arc<AtomicUsize>,
    max_pending: usize,
    /// fred's per-command deadline (also the connect and handshake bound).
    bound: Duration,
    /// Set when the address cannot be served by fred at all; every command fails with it.
    unusable: Option<NodeError>,
}

impl FredNode {
    /// Starts the client and waits at most `connect_timeout` for the first connect. Never fails: an
    /// unreachable node starts disconnected and fred keeps reconnecting in the background.
    pub(crate) async fn connect(addr: NodeAddr, opts: &ConnectOptions) -> Self {
        // Zero would mean "no timeout" to fred.
        let bound = opts.connect_timeout.max(Duration::from_millis(1));
        // fred resolves `format!("{host}:{port}")`, so an IPv6 literal needs its brackets back.
        let host = if addr.host.contains(':') {
            format!("[{}]", addr.host)
        } else {
            addr.host.clone()
        };
        // fred's `database` is a u8; silently using another database would be a correctness bug.
        let database = u8::try_from(addr.db).ok();
        let unusable = database.is_none().then(|| {
            NodeError::Connect(format!("database {} is above fred's limit of 255", addr.db))
        });
        let config = Config {
            // With fail_fast a failed first connect ends the client for good; we want background reconnects.
            fail_fast: false,
            // RESP2: nil stays nil and no HELLO handshake is needed.
            version: RespVersion::RESP2,
            username: addr.username.clone(),
            password: addr.password.clone(),
            database: database.filter(|&db| db != 0),
            server: ServerConfig::Centralized {
                server: Server::new(host, addr.port),
            },
            ..Config::default()
        };
        let perf = PerformanceConfig {
            default_command_timeout: bound,
            ..PerformanceConfig::default()
        };
        let connection = ConnectionConfig {
            connection_timeout: bound,
            internal_command_timeout: bound,
            max_command_attempts: 1, // the one write; never again after a reconnect
            tcp: TcpConfig {
                nodelay: Some(true),
                ..TcpConfig::default()
            },
            ..ConnectionConfig::default()
        };
        let ms = |d: Duration| u32::try_from(d.as_millis()).unwrap_or(u32::MAX).max(1);
        let min = ms(opts.reconnect_min);
        let max = ms(opts.reconnect_max).max(min);
        // 0 attempts: retry forever. Without fail_fast fred runs even the first connect through this policy,
        // so the first attempt starts after `reconnect_min` plus jitter (20–40 ms with the defaults).
        let mut policy = ReconnectPolicy::new_exponential(0, min, max, 2);
        policy.set_jitter(min);
        let client = Client::new(config, Some(perf), Some(connection), Some(policy));

        let task = if unusable.is_none() {
            // Subscribe before connecting so the first attempt's failure cannot be missed.
            let mut errors = client.error_rx();
            let task = client.connect();
            let first_attempt = async {
                // `wait_for_connect` checks the state, then subscribes: a connect landing in between is
                // only seen by re-checking, hence the short tick.
                while !client.is_connected() {
                    tokio::select! {
                        _ = client.wait_for_connect() => return,
                        _ = errors.recv() => return, // failed; reconnects continue in the background
                        _ = tokio::time::sleep(Duration::from_millis(10)) => {}
                    }
                }
            };
            let _ = tokio::time::timeout(bound, first_attempt).await;
            Some(task)
        } else {
            None
        };
        Self {
            client,
            addr,
            task,
            in_flight: Arc::default(),
            max_pending: opts.max_pending.max(1),
            bound,
            unusable,
        }
    }
}

impl NodeClient for FredNode {
    fn send(&self, cmd: &Cmd) -> Pending {
        if let Some(err) = &self.unusable {
            return Pending::ready(Err(err.clone()));
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Pending::ready(Err(NodeError::Disconnected));
        };
        if !self.client.is_connected() {
            return Pending::ready(Err(NodeError::Disconnected));
        }
        let Some(slot) = Slot::take(&self.in_flight, self.max_pending) else {
            return Pending::ready(Err(NodeError::Backpressure));
        };
        let (client, cmd) = (self.client.clone(), cmd.clone());
        // fred's own deadline fires first (at most twice with the EVAL fallback); this one only guarantees
        // the spawned task ends whatever happens inside fred.
        let safety_net = self.bound.saturating_mul(3);
        let mut fut = Box::pin(async move {
            let _slot = slot;
            tokio::time::timeout(safety_net, run(client, cmd))
                .await
                .unwrap_or(Err(NodeError::Timeout))
        });
        // The first poll runs fred's command method up to its send, which queues the command now and in
        // call order (a release sent after a SET cannot overtake it).
        let waker = Waker::from(Arc::new(NoopWake));
        if let Poll::Ready(result) = fut.as_mut().poll(&mut Context::from_waker(&waker)) {
            return Pending::ready(result);
        }
        let handle = runtime.spawn(fut);
        Pending::boxed(async move { handle.await.unwrap_or(Err(NodeError::ConnectionLost)) })
    }

    fn is_connected(&self) -> bool {
        self.unusable.is_none() && self.client.is_connected()
    }
}

/// Runs one command to its reply; `EVALSHA` falls back to `EVAL` once on `NOSCRIPT`.
async fn run(client: Client, cmd: Cmd) -> NodeResult {
    match cmd {
        Cmd::SetNxPx { key, value, ttl_ms } => {
            let ttl = i64::try_from(ttl_ms)
                .map_err(|_| NodeError::Protocol("TTL out of range".into()))?;
            let value = Value::Bytes(Bytes::copy_from_slice(value.as_bytes()));
            let result = client
                .set::<Value, _, _>(
                    Key::from(key),
                    value,
                    Some(Expiration::PX(ttl)),
                    Some(SetOptions::NX),
                    false,
                )
                .await;
            // Only SET answers `+OK`; RESP2 gives fred no way to tell it from a bulk "OK" elsewhere.
            match result {
                Ok(Value::String(s)) if &*s == "OK" => Ok(Reply::Ok),
                other => reply(other),
            }
        }
        Cmd::Script {
            script,
            key,
            value,
            arg,
        } => {
            let mut args = vec![Value::Bytes(Bytes::copy_from_slice(value.as_bytes()))];
            args.extend(arg.map(|a| Value::Bytes(Bytes::from(a.to_string()))));
            match client
                .evalsha::<Value, _, _, _>(script.sha1, Key::from(key.clone()), args.clone())
                .await
            {
                // The script did not run, so sending its source is not a replay.
                Err(e) if e.details().starts_with("NOSCRIPT") => reply(
                    client
                        .eval::<Value, _, _, _>(script.source, Key::from(key), args)
                        .await,
                ),
                other => reply(other),
            }
        }
        Cmd::InfoServer => reply(client.info::<Value>(Some(InfoKind::Server)).await),
    }
}

fn reply(result: Result<Value, FredError>) -> NodeResult {
    match result {
        Ok(Value::Null) => Ok(Reply::Nil),
        Ok(Value::Integer(i)) => Ok(Reply::Int(i)),
        Ok(Value::String(s)) => Ok(Reply::Data(s.into_inner())),
        Ok(Value::Bytes(b)) => Ok(Reply::Data(b)),
        Ok(_) => Ok(Reply::Other),
        Err(e) => Err(node_error(&e)),
    }
}

/// Maps fred's error to ours. fred files server errors under generic kinds (`ERR` is `Unknown`, `WRONGTYPE`
/// is `InvalidArgument`, see `protocol::utils::pretty_error`) but keeps the full message, whose first word is
/// the server's all-caps error code; fred's own messages are in sentence case.
fn node_error(e: &FredError) -> NodeError {
    let details = e.details();
    let code = details.split_whitespace().next().unwrap_or("");
    let from_server = code.len() >= 2
        && code
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
    match e.kind() {
        ErrorKind::Timeout => NodeError::Timeout,
        ErrorKind::Backpressure => NodeError::Backpressure,
        // The connection closed under the command: it may have run.
        ErrorKind::IO | ErrorKind::Canceled => NodeError::ConnectionLost,
        _ if from_server => NodeError::Server(details.to_string()),
        // e.g. "Too many failed write attempts." (fred refused to send it again after a reconnect).
        ErrorKind::Unknown | ErrorKind::Routing => NodeError::ConnectionLost,
        kind => NodeError::Protocol(format!("{kind:?}: {details}")),
    }
}

/// One unit of the in-flight budget, returned when the command's task ends.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(counter: &Arc<AtomicUsize>, max: usize) -> Option<Self> {
        counter
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()?;
        Some(Self(counter.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The waker for the one synchronous poll in `send`; the spawned task re-polls with a real one.
struct NoopWake;

impl Wake for NoopWake {
    fn wake(self: Arc<Self>) {}
}

impl Drop for FredNode {
    fn drop(&mut self) {
        let Some(task) = self.task.take() else { return };
        // QUIT lets queued commands (fired releases) go out first; the abort then ends the routing task even
        // if it sits in a reconnect attempt that QUIT cannot interrupt.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let (client, bound) = (self.client.clone(), self.bound);
                runtime.spawn(async move {
                    let _ = tokio::time::timeout(bound, client.quit()).await;
                    task.abort();
                });
            }
            Err(_) => task.abort(),
        }
    }
}

impl fmt::Debug for FredNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // NodeAddr's Debug leaves out the credentials.
        f.debug_struct("FredNode")
            .field("addr", &self.addr)
            .field("connected", &self.is_connected())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::{Script, RELEASE};
    use crate::value::LockValue;
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
            key: Bytes::from_static(key),
            value,
            arg: None,
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
        assert_eq!(
            n.send(&set(b"k", LockValue::random().unwrap())).await,
            Err(NodeError::Disconnected)
        );
        assert!(sent.elapsed() < Duration::from_millis(100));
    }

    /// Loops for about a second, then sets the key: replayed after a reconnect, it would leave the key set.
    static SLOW_SET: Script = Script {
        source: "local n = 0 for i = 1, 200000000 do n = n + 1 end \
                 redis.call('SET', KEYS[1], ARGV[1]) return 1",
        sha1: "0000000000000000000000000000000000000000",
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
}
