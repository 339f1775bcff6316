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
//!   during a reconnect; they fail with the last connect error, which names the node.
//!
//! Files: this one (the [`NodeClient`] implementation), `settings` (fred's configuration per node kind:
//! one master, a Redis Cluster, a Sentinel-managed master; TLS), `identity` (the quarantine fed from
//! fred's connection and topology events), `scripts` (loading the Lua scripts, `EVALSHA` with the
//! `NOSCRIPT` fallback), `reply` (fred's replies and errors as ours).

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use ::fred::prelude::{
    Client, ClientLike, Error as FredError, EventInterface, Expiration, Key, KeysInterface,
    SetOptions, Value,
};
use ::fred::types::{ConnectHandle, InfoKind};
use bytes::Bytes;

use super::{ConnectOptions, NodeClient, Pending};
use crate::addr::{NodeAddr, Topology};
use crate::algo::quarantine::Quarantine;
use crate::error::NodeError;
use crate::protocol::cmd::{Cmd, NodeResult, Reply};
use reply::reply;

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
    /// A Redis Cluster: scripts are loaded on every master.
    clustered: bool,
    /// Set when the address cannot be served by fred at all, or its handshake was refused; every
    /// command fails with it.
    unusable: Option<NodeError>,
    /// `unusable` came from the address itself: the node could not be set up (see
    /// [`NodeClient::setup_error`]).
    unservable: bool,
    /// Why the last connect failed (names the node), for requests made while disconnected.
    last_error: Arc<std::sync::Mutex<Option<NodeError>>>,
    /// Whether this node votes; fed by `INFO server` after the first connect and every reconnect.
    quarantine: Arc<Quarantine>,
    /// The event listeners (last error, quarantine); aborted on drop.
    listeners: Vec<tokio::task::JoinHandle<Result<(), FredError>>>,
}

impl FredNode {
    /// Starts the client and waits at most `connect_timeout` for the first connect. Never fails: an
    /// unreachable node starts disconnected and fred keeps reconnecting in the background.
    pub(crate) async fn connect(addr: NodeAddr, opts: &ConnectOptions) -> Self {
        let bound = settings::bound(opts);
        let clustered = addr.topology == Topology::Cluster;
        let quarantine = Arc::new(Quarantine::new(opts.quarantine));
        let mut node = Self {
            client: Client::default(),
            addr,
            task: None,
            in_flight: Arc::default(),
            max_pending: opts.max_pending.max(1),
            bound,
            clustered,
            unusable: None,
            unservable: false,
            last_error: Arc::default(),
            quarantine,
            listeners: Vec::new(),
        };
        let settings = match settings::for_node(&node.addr, opts) {
            Ok(settings) => settings,
            Err(unusable) => {
                // Never connected: every command fails with why.
                node.unusable = Some(unusable);
                node.unservable = true;
                return node;
            }
        };
        let client = Client::new(
            settings.config,
            Some(settings.perf),
            Some(settings.connection),
            Some(settings.policy),
        );
        // Subscribe before connecting so the first attempt's failure cannot be missed.
        let mut errors = client.error_rx();
        let (last, addr) = (node.last_error.clone(), node.addr.clone());
        node.listeners.push(client.on_error(move |(e, _)| {
            *last.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(NodeError::Connect(format!("{addr}: {}", e.details())));
            async { Ok(()) }
        }));
        node.task = Some(client.connect());
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
        if client.is_connected() {
            // Like the engine's own handshake: acquire-side scripts are never sent as EVAL (see
            // `Script::resend`), so without this a node's first use of each would fail once. A user
            // not allowed to load them could take locks it cannot release: refuse the node, as the
            // engine's own handshake does.
            if let Err(refused) = scripts::load_all(&client, opts.scripts, clustered, bound).await {
                node.unusable = Some(NodeError::Connect(format!(
                    "{}: handshake refused: {refused}",
                    node.addr
                )));
            }
        }
        if opts.quarantine.is_some() {
            let watchers = identity::watch(&client, &node.quarantine, clustered);
            node.listeners.extend(watchers);
            if client.is_connected() {
                identity::read_all(&client, &node.quarantine, clustered).await;
            }
        }
        node.client = client;
        node
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
            let last = self
                .last_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            return Pending::ready(Err(last.unwrap_or(NodeError::Disconnected)));
        }
        let Some(slot) = Slot::take(&self.in_flight, self.max_pending) else {
            return Pending::ready(Err(NodeError::Backpressure));
        };
        let (client, cmd, clustered) = (self.client.clone(), cmd.clone(), self.clustered);
        // fred's own deadline fires first (at most twice with the EVAL fallback); this one only guarantees
        // the spawned task ends whatever happens inside fred.
        let safety_net = self.bound.saturating_mul(3);
        let mut fut = Box::pin(async move {
            let _slot = slot;
            tokio::time::timeout(safety_net, run(client, cmd, clustered))
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

    fn setup_error(&self) -> Option<NodeError> {
        self.unusable.clone().filter(|_| self.unservable)
    }

    fn batches(&self) -> bool {
        // A cluster would refuse keys of several hash slots in one script.
        !self.clustered
    }

    fn status(&self) -> super::LinkStatus {
        let last = self.last_error.lock().unwrap_or_else(|p| p.into_inner());
        super::LinkStatus {
            connected: self.is_connected(),
            quarantine: Some(self.quarantine.view()),
            silenced_until: None,
            last_error: self.unusable.clone().or_else(|| last.clone()),
            ..Default::default()
        }
    }
}

/// Runs one command to its reply; `EVALSHA` falls back to `EVAL` once on `NOSCRIPT`.
async fn run(client: Client, cmd: Cmd, clustered: bool) -> NodeResult {
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
            args.extend(numbers.as_slice().iter().map(|a| number(*a)));
            scripts::eval(&client, script, keys, args, clustered).await
        }
        Cmd::ExtendMany { script, locks } => {
            let keys = locks.iter().map(|l| Key::from(l.key.clone())).collect();
            let args = locks
                .iter()
                .flat_map(|l| {
                    [
                        Value::Bytes(Bytes::copy_from_slice(l.value.as_bytes())),
                        number(l.ttl_ms),
                    ]
                })
                .collect();
            scripts::eval(&client, script, keys, args, clustered).await
        }
        Cmd::ReleaseMany {
            script,
            locks,
            keys_in_argv,
        } => {
            // Built only by the pipelined transport; handled here so the match stays whole.
            let keys: Vec<Key> = locks.iter().map(|(k, _)| Key::from(k.clone())).collect();
            let values = locks
                .iter()
                .map(|(_, v)| Value::Bytes(Bytes::copy_from_slice(v.as_bytes())));
            let (keys, args) = if keys_in_argv {
                let names = locks.iter().map(|(k, _)| Value::Bytes(k.clone()));
                (Vec::new(), names.chain(values).collect())
            } else {
                (keys, values.collect())
            };
            scripts::eval(&client, script, keys, args, clustered).await
        }
        Cmd::ScriptBytes { script, keys, args } => {
            let keys = keys.as_slice().iter().cloned().map(Key::from).collect();
            let args = args.iter().cloned().map(Value::Bytes).collect();
            scripts::eval(&client, script, keys, args, clustered).await
        }
        Cmd::ScriptLoad(script) => reply(scripts::load(&client, script, clustered).await),
        Cmd::InfoServer => reply(client.info::<Value>(Some(InfoKind::Server)).await),
    }
}

/// A numeric script argument, as the decimal string Lua reads.
fn number(n: u64) -> Value {
    Value::Bytes(Bytes::from(n.to_string()))
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
        for listener in self.listeners.drain(..) {
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

mod identity;
mod reply;
mod scripts;
mod settings;
#[cfg(test)]
mod tests;
