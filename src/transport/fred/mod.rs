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
use crate::quarantine::{parse_info, Quarantine};

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
    /// Whether this node votes; fed by `INFO server` after the first connect and every reconnect.
    quarantine: Arc<Quarantine>,
    /// The reconnect listener that refreshes `quarantine`; aborted on drop.
    identity_tasks: Vec<tokio::task::JoinHandle<Result<(), FredError>>>,
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
        let unusable = if addr.tls {
            // Not wired yet (fred's rustls feature); say so instead of talking plain TCP to a TLS port.
            Some(NodeError::Connect(format!(
                "{addr}: rediss:// is not supported on the fred transport yet"
            )))
        } else {
            database.is_none().then(|| {
                NodeError::Connect(format!("database {} is above fred's limit of 255", addr.db))
            })
        };
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
        let quarantine = Arc::new(Quarantine::new(opts.quarantine));
        // fred reconnects on its own, so the identity is read after the fact: a restarted node may
        // answer for the moment between its reconnect and this INFO (the engine's own transport reads
        // it inside the handshake, before the connection is used).
        let mut identity_tasks = Vec::new();
        if opts.quarantine.is_some() {
            // A drop suspends the vote at once; it comes back only once the new connection's
            // INFO has been read (and passes the quarantine).
            let q = quarantine.clone();
            identity_tasks.push(client.on_error(move |_| {
                q.suspend();
                async { Ok(()) }
            }));
            let (q, c) = (quarantine.clone(), client.clone());
            identity_tasks.push(client.on_reconnect(move |_| {
                let (q, c) = (q.clone(), c.clone());
                async move {
                    read_identity(&c, &q).await;
                    Ok(())
                }
            }));
        }
        if opts.quarantine.is_some() && client.is_connected() {
            read_identity(&client, &quarantine).await;
        }
        Self {
            client,
            addr,
            task,
            in_flight: Arc::default(),
            max_pending: opts.max_pending.max(1),
            bound,
            unusable,
            quarantine,
            identity_tasks,
        }
    }
}

/// Reads `INFO server` and feeds the quarantine; a node that will not say who it is stays as it was.
async fn read_identity(client: &Client, quarantine: &Quarantine) {
    if let Ok(Value::String(info)) = client.info::<Value>(Some(InfoKind::Server)).await {
        if let Some(identity) = parse_info(info.as_bytes()) {
            quarantine.on_connect(&identity);
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

    fn votes(&self) -> bool {
        self.quarantine.votes()
    }

    fn run_id(&self) -> Option<String> {
        self.quarantine.run_id()
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
            keys,
            value,
            args: numbers,
        } => {
            let keys: Vec<Key> = keys.as_slice().iter().cloned().map(Key::from).collect();
            let mut args = vec![Value::Bytes(Bytes::copy_from_slice(value.as_bytes()))];
            args.extend(
                numbers
                    .as_slice()
                    .iter()
                    .map(|a| Value::Bytes(Bytes::from(a.to_string()))),
            );
            match client
                .evalsha::<Value, _, _, _>(script.sha1, keys.clone(), args.clone())
                .await
            {
                // The script did not run, so sending its source is not a replay (see `Script::resend`
                // for why acquire-side scripts reload instead).
                Err(e) if e.details().starts_with("NOSCRIPT") && script.resend => reply(
                    client
                        .eval::<Value, _, _, _>(script.source, keys, args)
                        .await,
                ),
                Err(e) if e.details().starts_with("NOSCRIPT") => {
                    let _ = client.script_load::<Value, _>(script.source).await;
                    reply(Err(e))
                }
                other => reply(other),
            }
        }
        Cmd::ScriptLoad(script) => reply(client.script_load::<Value, _>(script.source).await),
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
        for listener in self.identity_tasks.drain(..) {
            listener.abort();
        }
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
mod tests;
