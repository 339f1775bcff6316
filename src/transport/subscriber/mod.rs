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
//! subscribed a while without users, so waiters that come and go do not resubscribe (`linger`).
//!
//! Files: this one (the notifier and its subscriptions), `hub` (the channel registry the
//! connections share), `conn` (one node's subscriber connection), `linger` (lingering channels).

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};

use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::ConnectOptions;
use crate::addr::{NodeAddr, Topology};
use hub::{Channel, Conn, Hub};
use linger::Idle;

/// The engine's notification hub: the channel registry and one connection task per node.
#[derive(Debug)]
pub(crate) struct Notifier {
    inner: Arc<Hub>,
    /// How many of the nodes publish to a connection of ours (a Sentinel-managed node has none).
    heard: usize,
    _stop: DropGuard,
}

/// Interest in one channel; unsubscribes when the last one for the channel is dropped.
#[derive(Debug)]
pub(crate) struct Subscription {
    hub: Arc<Hub>,
    channel: Bytes,
    notify: Arc<Notify>,
    name: Option<Bytes>,
    /// A second channel woken into the same signal (see [`Notifier::subscribe_with_key`]).
    also: Option<Box<Subscription>>,
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
            .enumerate()
            .flat_map(|(index, addr)| {
                // A standalone server is the node: what it publishes, that node granted.
                let node_bit = match addr.topology {
                    Topology::Standalone => 1u16.checked_shl(index as u32).unwrap_or(0),
                    _ => 0,
                };
                members(addr).into_iter().map(move |addr| (addr, node_bit))
            })
            .map(|(addr, node_bit)| {
                Arc::new(Conn {
                    addr,
                    node_bit,
                    out: Mutex::new(BytesMut::new()),
                    wake: Notify::new(),
                    resubscribing: AtomicUsize::new(0),
                })
            })
            .collect();
        let inner = Arc::new(Hub {
            channels: Mutex::new(HashMap::new()),
            idle: Idle::default(),
            conns,
        });
        for conn in &inner.conns {
            tokio::spawn(conn::run(
                inner.clone(),
                conn.clone(),
                opts.clone(),
                stop.clone(),
            ));
        }
        Self {
            inner,
            heard: addrs.iter().filter(|a| !members(a).is_empty()).count(),
            _stop: stop.drop_guard(),
        }
    }

    /// How many of the nodes this engine hears publish: a waiter that counts on messages (a
    /// grant needs a majority of nodes heard) must otherwise poll.
    pub(crate) fn heard_nodes(&self) -> usize {
        self.heard
    }

    /// Subscribes to `channel` on every node (once per channel, however many subscriptions).
    pub(crate) fn subscribe(&self, channel: &Bytes) -> Subscription {
        self.subscribe_as(channel, None, false, None)
    }

    /// Subscribes to `channel` as `name`, lingering (module doc): woken by messages naming it (or
    /// naming nobody), not by messages naming another waiter. For a channel naming only our
    /// waiters (the fair lock's); names are unique per waiter.
    pub(crate) fn subscribe_lingering(&self, channel: &Bytes, name: Bytes) -> Subscription {
        self.subscribe_as(channel, Some(name), true, None)
    }

    /// A plain lock's named waiter (`crate::protocol::handoff`): its own channel `own` as `name`
    /// (as [`Self::subscribe_lingering`]), and the key's `key`, where a release that cannot name a
    /// waiter (a node's native release, an older client's, an operator's forced release) wakes
    /// everyone with an empty message. Both lingering, one signal.
    pub(crate) fn subscribe_with_key(&self, own: &Bytes, key: &Bytes, name: Bytes) -> Subscription {
        let mut first = self.subscribe_as(own, Some(name.clone()), true, None);
        let shared = Some(first.notify.clone());
        first.also = Some(Box::new(self.subscribe_as(key, Some(name), true, shared)));
        first
    }

    /// Whether `channel` is subscribed, by a waiter now or lingering after one: a process that
    /// waited on a key within the linger time is likely to wait on it again.
    pub(crate) fn is_subscribed(&self, channel: &Bytes) -> bool {
        self.inner.channels().contains_key(channel)
    }

    fn subscribe_as(
        &self,
        channel: &Bytes,
        name: Option<Bytes>,
        linger: bool,
        shared: Option<Arc<Notify>>,
    ) -> Subscription {
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
                grants: HashMap::new(),
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
                .or_insert_with(|| shared.unwrap_or_default())
                .clone(),
            None => entry.notify.clone(),
        };
        Subscription {
            hub: self.inner.clone(),
            channel: channel.clone(),
            notify,
            name,
            also: None,
        }
    }
}

impl Subscription {
    /// The signal a message on this channel fires (`notify_waiters`: arm it before the attempt it
    /// should follow, with `Notified::enable`).
    pub(crate) fn notify(&self) -> Arc<Notify> {
        self.notify.clone()
    }

    /// The nodes heard publishing the grant `message` on this channel (bit = node index).
    pub(crate) fn grants(&self, message: &[u8]) -> u16 {
        let channels = self.hub.channels();
        let heard = channels
            .get(&self.channel)
            .and_then(|c| c.grants.get(message));
        heard.copied().unwrap_or(0)
    }

    /// Forgets the grant `message` (its waiter is done with it).
    pub(crate) fn forget_grants(&self, message: &[u8]) {
        if let Some(channel) = self.hub.channels().get_mut(&self.channel) {
            channel.grants.remove(message);
        }
    }

    /// Forgets every grant heard on this channel: called before a waiter first sends a new value,
    /// so nothing written down can be for it yet, and the late grants of the channel's earlier
    /// values (the nodes a won wait did not need, an earlier epoch's) never fill the channel's
    /// list, whose overflow would also drop the current value's grants (a round more for it).
    pub(crate) fn forget_all_grants(&self) {
        if let Some(channel) = self.hub.channels().get_mut(&self.channel) {
            channel.grants.clear();
        }
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

mod conn;
mod hub;
mod linger;

#[cfg(test)]
mod tests;
