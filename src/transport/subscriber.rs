//! Release notifications across processes: one subscriber connection per node, opened on first use.
//!
//! A release publishes on the lock's key name (channels and keys are separate namespaces). A process
//! whose waiter lost a round subscribes to that channel on every node and wakes the waiter on the first
//! message from any of them, instead of sleeping out its whole retry pause. Messages are hints: a missed
//! one (subscription not yet active, reconnect) only means the waiter wakes at its timer, as without
//! notifications. Subscriptions are reference-counted per channel and re-sent after a reconnect.
//!
//! A message's payload says whom it is for: empty (a plain lock's release) wakes every waiter of the
//! channel; a waiter's wake name (the fair lock names its queue's new head, see
//! `kinds::fair::wake_name`) wakes only the subscription registered under that name, so a release
//! costs one attempt instead of one per waiter. A **lingering** channel (the fair lock's) stays
//! subscribed a while without users, so waiters that come and go do not resubscribe (`super::linger`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use redis_protocol::resp2::decode::decode_bytes_mut;
use redis_protocol::resp2::types::BytesFrame;

use super::bounded::{Framer, Limits};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::connect::{jitter, open, Stream};
use super::linger::Idle;
use super::resp::encode_args;
use super::ConnectOptions;
use crate::addr::{NodeAddr, Topology};

/// The engine's notification hub: the channel registry and one connection task per node.
#[derive(Debug)]
pub(crate) struct Notifier {
    inner: Arc<Hub>,
    _stop: DropGuard,
}

#[derive(Debug)]
struct Hub {
    channels: Mutex<HashMap<Bytes, Channel>>,
    /// Lingering channels without users (touched only while `channels` is held).
    idle: Idle,
    conns: Vec<Arc<Conn>>,
}

#[derive(Debug)]
struct Channel {
    users: usize,
    notify: Arc<Notify>,
    /// Named subscriptions (fair waiters), woken by a message with their name or an empty one.
    named: HashMap<Bytes, Arc<Notify>>,
    /// Some node confirmed the subscription. Until then a release can go unheard, so the first
    /// confirmation also wakes the waiters: one immediate retry covers a release that landed before.
    active: bool,
    /// Kept subscribed a while without users; since when it has had none.
    linger: bool,
    idle_since: Option<Instant>,
}

/// One node's subscriber connection: commands to write, and the signal to write them.
#[derive(Debug)]
struct Conn {
    addr: NodeAddr,
    out: Mutex<BytesMut>,
    wake: Notify,
}

/// Interest in one channel; unsubscribes when the last one for the channel is dropped.
#[derive(Debug)]
pub(crate) struct Subscription {
    hub: Arc<Hub>,
    channel: Bytes,
    notify: Arc<Notify>,
    name: Option<Bytes>,
}

impl Notifier {
    /// Starts one subscriber connection per node (they idle until a channel is wanted).
    ///
    /// A cluster node set is subscribed through every listed member: Redis Cluster broadcasts a
    /// `PUBLISH` to every member, so each one hears the releases of every shard, and a member down
    /// costs nothing while another is up (a release is then heard once per live member: a hint,
    /// woken waiters simply attempt). A Sentinel-managed node has none (its address is a Sentinel):
    /// waiters hear releases from the other nodes, or wait out their pause.
    pub(crate) fn start(addrs: &[NodeAddr], opts: &ConnectOptions) -> Self {
        let stop = CancellationToken::new();
        let conns: Vec<Arc<Conn>> = addrs
            .iter()
            .flat_map(members)
            .map(|addr| {
                Arc::new(Conn {
                    addr,
                    out: Mutex::new(BytesMut::new()),
                    wake: Notify::new(),
                })
            })
            .collect();
        let inner = Arc::new(Hub {
            channels: Mutex::new(HashMap::new()),
            idle: Idle::default(),
            conns,
        });
        for conn in &inner.conns {
            tokio::spawn(run(inner.clone(), conn.clone(), opts.clone(), stop.clone()));
        }
        Self {
            inner,
            _stop: stop.drop_guard(),
        }
    }

    /// Subscribes to `channel` on every node (once per channel, however many subscriptions).
    pub(crate) fn subscribe(&self, channel: &Bytes) -> Subscription {
        self.subscribe_as(channel, None, false)
    }

    /// Subscribes to `channel` as `name`: woken by messages naming it (or naming nobody), not by
    /// messages naming another waiter. Names are unique per waiter (digests of random values).
    pub(crate) fn subscribe_named(&self, channel: &Bytes, name: Bytes) -> Subscription {
        self.subscribe_as(channel, Some(name), false)
    }

    /// [`Self::subscribe_named`], lingering (module doc): for a channel naming only our waiters.
    pub(crate) fn subscribe_lingering(&self, channel: &Bytes, name: Bytes) -> Subscription {
        self.subscribe_as(channel, Some(name), true)
    }

    fn subscribe_as(&self, channel: &Bytes, name: Option<Bytes>, linger: bool) -> Subscription {
        let mut channels = self.inner.channels();
        self.inner.sweep(&mut channels);
        let entry = channels.entry(channel.clone()).or_insert_with(|| {
            for conn in &self.inner.conns {
                conn.queue(b"SUBSCRIBE", channel);
            }
            Channel {
                users: 0,
                notify: Arc::new(Notify::new()),
                named: HashMap::new(),
                active: false,
                linger,
                idle_since: None,
            }
        });
        entry.users += 1;
        entry.idle_since = None;
        let notify = match &name {
            Some(name) => entry
                .named
                .entry(name.clone())
                .or_insert_with(|| Arc::new(Notify::new()))
                .clone(),
            None => entry.notify.clone(),
        };
        Subscription {
            hub: self.inner.clone(),
            channel: channel.clone(),
            notify,
            name,
        }
    }
}

impl Subscription {
    /// The signal a message on this channel fires (`notify_waiters`: arm it before the attempt it
    /// should follow, with `Notified::enable`).
    pub(crate) fn notify(&self) -> Arc<Notify> {
        self.notify.clone()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut channels = self.hub.channels();
        if let Some(entry) = channels.get_mut(&self.channel) {
            entry.users -= 1;
            if let Some(name) = &self.name {
                // Only our own registration (a name drawn twice would share one signal).
                if entry
                    .named
                    .get(name)
                    .is_some_and(|n| Arc::ptr_eq(n, &self.notify))
                {
                    entry.named.remove(name);
                }
            }
            if entry.users == 0 && entry.linger {
                entry.idle_since = Some(self.hub.idle.left(&self.channel));
            } else if entry.users == 0 {
                channels.remove(&self.channel);
                self.hub.unsubscribe(&self.channel);
            }
        }
        self.hub.sweep(&mut channels);
    }
}

impl Channel {
    /// Wakes the waiters a message is for: all for an empty payload, else the one it names.
    fn wake(&self, payload: &[u8]) {
        if payload.is_empty() {
            self.wake_all();
        } else if let Some(named) = self.named.get(payload) {
            named.notify_waiters();
        }
    }

    fn wake_all(&self) {
        self.notify.notify_waiters();
        for named in self.named.values() {
            named.notify_waiters();
        }
    }
}

impl Hub {
    fn channels(&self) -> MutexGuard<'_, HashMap<Bytes, Channel>> {
        self.channels.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn unsubscribe(&self, channel: &[u8]) {
        for conn in &self.conns {
            conn.queue(b"UNSUBSCRIBE", channel);
        }
    }

    /// Unsubscribes the lingering channels idle long enough and still unused.
    fn sweep(&self, channels: &mut HashMap<Bytes, Channel>) {
        self.idle.sweep(|channel, since| {
            let unused = |c: &Channel| c.users == 0 && c.idle_since == Some(since);
            if channels.get(channel).is_some_and(unused) {
                channels.remove(channel);
                self.unsubscribe(channel);
            }
        });
    }
}

impl Conn {
    fn out(&self) -> MutexGuard<'_, BytesMut> {
        self.out.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn queue(&self, verb: &[u8], channel: &[u8]) {
        encode_args(&mut self.out(), &[verb, channel]);
        self.wake.notify_one();
    }
}

/// The servers to subscribe on for one node: itself, each listed member of a cluster, none for a
/// Sentinel set.
fn members(addr: &NodeAddr) -> Vec<NodeAddr> {
    match addr.topology {
        Topology::Standalone => vec![addr.clone()],
        Topology::Cluster => std::iter::once((addr.host.clone(), addr.port))
            .chain(addr.more_hosts.iter().cloned())
            .map(|(host, port)| NodeAddr {
                host,
                port,
                topology: Topology::Standalone,
                more_hosts: Vec::new(),
                ..addr.clone()
            })
            .collect(),
        Topology::Sentinel { .. } => Vec::new(),
    }
}

/// One node's subscriber loop: connect, (re)subscribe to every wanted channel, forward messages,
/// reconnect with backoff when the connection drops.
async fn run(hub: Arc<Hub>, conn: Arc<Conn>, opts: ConnectOptions, stop: CancellationToken) {
    let mut delay = opts.reconnect_min;
    loop {
        let stream = tokio::select! {
            _ = stop.cancelled() => return,
            s = open(&conn.addr, &opts, false) => s,
        };
        let Ok((stream, _)) = stream else {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(delay + jitter(delay)) => {}
            }
            delay = (delay * 2).min(opts.reconnect_max);
            continue;
        };
        let connected_at = tokio::time::Instant::now();
        {
            // A new connection has no subscriptions: rebuild them from the registry, dropping whatever
            // was queued for the old one.
            let channels = hub.channels();
            let mut out = conn.out();
            out.clear();
            for channel in channels.keys() {
                encode_args(&mut out, &[b"SUBSCRIBE", channel]);
            }
        }
        conn.wake.notify_one();
        let stopped = match stream {
            Stream::Tcp(tcp) => serve(&hub, &conn, tcp, &opts.limits, &stop).await,
            Stream::Tls(tls) => serve(&hub, &conn, *tls, &opts.limits, &stop).await,
        };
        if stopped {
            return;
        }
        // A connection that dropped soon after opening (a proxy in front of a dead node, maxclients)
        // must not turn into a reconnect storm: back off unless it stayed up for a while.
        if connected_at.elapsed() > opts.reconnect_max {
            delay = opts.reconnect_min;
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(delay + jitter(delay)) => {}
        }
        delay = (delay * 2).min(opts.reconnect_max);
    }
}

/// Writes queued (un)subscriptions and delivers messages until the connection fails (`false`) or the
/// engine stops (`true`).
async fn serve<S: AsyncRead + AsyncWrite>(
    hub: &Hub,
    conn: &Conn,
    stream: S,
    limits: &Limits,
    stop: &CancellationToken,
) -> bool {
    let (mut rd, mut wr) = tokio::io::split(stream);
    let mut buf = BytesMut::with_capacity(4096);
    let mut framer = Framer::new(*limits);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return true,
            _ = conn.wake.notified() => {
                let batch = std::mem::take(&mut *conn.out());
                if !batch.is_empty() && (wr.write_all(&batch).await.is_err() || wr.flush().await.is_err()) {
                    return false;
                }
            }
            read = rd.read_buf(&mut buf) => {
                if !matches!(read, Ok(n) if n > 0) || !deliver(hub, &conn.addr, &mut buf, &mut framer) {
                    return false;
                }
            }
        }
    }
}

/// Wakes the waiters of every complete `message` frame in `buf`; false if the stream is corrupt or
/// breaks a bound (`bounded` frames it first, so `redis-protocol` only sees a complete frame nested at
/// most `MAX_DEPTH` deep). Messages are hints: a node that sends nonsense only costs its waiters their
/// early wake-up, and gets its connection closed.
fn deliver(hub: &Hub, node: &NodeAddr, buf: &mut BytesMut, framer: &mut Framer) -> bool {
    loop {
        let mut frame = match framer.next_frame(buf) {
            Ok(Some(frame)) => frame,
            Ok(None) => return true,
            Err(broken) => {
                tracing::warn!(%node, %broken, "subscriber connection closed");
                return false;
            }
        };
        let kind = match decode_bytes_mut(&mut frame) {
            Ok(Some((BytesFrame::Array(parts), _, _))) => match &parts[..] {
                [BytesFrame::BulkString(kind), BytesFrame::BulkString(channel), third] => {
                    let mut channels = hub.channels();
                    match (&kind[..], channels.get_mut(channel), third) {
                        (b"message", Some(entry), BytesFrame::BulkString(payload)) => {
                            entry.wake(payload)
                        }
                        (b"message", Some(entry), _) => entry.wake_all(),
                        (b"subscribe", Some(entry), _) if !entry.active => {
                            entry.active = true;
                            entry.wake_all();
                        }
                        (b"message" | b"subscribe" | b"unsubscribe", _, _) => {}
                        _ => return closed(node, "unknown pub/sub message kind"),
                    }
                    continue;
                }
                _ => "array that is not a pub/sub message",
            },
            Ok(Some((BytesFrame::Error(_), _, _))) => "server error",
            Ok(Some(_)) => "reply that is not an array",
            Ok(None) | Err(_) => "malformed reply",
        };
        // The only replies on this connection are pub/sub arrays: anything else is out of step.
        return closed(node, kind);
    }
}

fn closed(node: &NodeAddr, why: &str) -> bool {
    tracing::warn!(%node, why, "subscriber connection closed: unexpected reply to SUBSCRIBE");
    false
}

#[cfg(test)]
#[path = "subscriber_tests.rs"]
mod tests;
