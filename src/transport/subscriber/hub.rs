//! What the notifier and its connection tasks share: the channel registry ([`Hub`]), each
//! channel's waiters ([`Channel`]), and each node's (un)subscriptions on their way to its
//! connection ([`Conn`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use tokio::sync::Notify;

use super::linger::Idle;
use crate::addr::NodeAddr;
use crate::transport::resp::encode_args;

#[derive(Debug)]
pub(super) struct Hub {
    pub(super) channels: Mutex<HashMap<Bytes, Channel>>,
    /// Lingering channels without users (touched only while `channels` is held).
    pub(super) idle: Idle,
    pub(super) conns: Vec<Arc<Conn>>,
}

#[derive(Debug)]
pub(super) struct Channel {
    pub(super) users: usize,
    pub(super) notify: Arc<Notify>,
    /// Named subscriptions (fair waiters), woken by a message with their name or an empty one.
    pub(super) named: HashMap<Bytes, Arc<Notify>>,
    /// Grants heard (`crate::protocol::handoff`: a release that set the key to a waiter's entry
    /// publishes `g` and the entry's digest on the waiter's channel): by message, the nodes that
    /// sent it (bit = node index). Read and cleared by the waiter; kept small.
    pub(super) grants: HashMap<Bytes, u16>,
    /// Some node confirmed the subscription. Until then a release can go unheard, so the first
    /// confirmation also wakes the waiters: one immediate retry covers a release that landed before.
    pub(super) active: bool,
    /// Kept subscribed a while without users; since when it has had none.
    pub(super) linger: bool,
    pub(super) idle_since: Option<Instant>,
}

/// Grants a channel keeps written down at most.
const MAX_GRANTS: usize = 64;

/// One node's subscriber connection: commands to write, and the signal to write them.
#[derive(Debug)]
pub(super) struct Conn {
    pub(super) addr: NodeAddr,
    /// The node this server is, as a bit (see [`Channel::wake`]); 0 for a cluster member.
    pub(super) node_bit: u16,
    pub(super) out: Mutex<BytesMut>,
    pub(super) wake: Notify,
    /// Subscriptions re-sent by a reconnect and not yet confirmed: each confirmation wakes its
    /// channel's waiters, since what was published while the connection was down is lost.
    pub(super) resubscribing: AtomicUsize,
}

impl Channel {
    /// Wakes the waiters a message is for: all for an empty payload, else the one it names; a
    /// grant (`g` and 16 hex digits) is written down as heard from the nodes of `node_bit` (0 for a
    /// server that is not one node of its own: a cluster member hears every shard's messages) and
    /// wakes the channel's waiters (a waiter's own channel: its name's); a named grant (a name of
    /// 16 hex digits, then a grant) is written down the same way and wakes that name only.
    pub(super) fn wake(&mut self, payload: &[u8], node_bit: u16) {
        if payload.is_empty() {
            self.wake_all();
        } else if payload.len() == 17 && payload[0] == b'g' {
            if self.grants.len() >= MAX_GRANTS {
                // Only grants nobody waits for any more pile up (a waiter clears its own).
                self.grants.clear();
            }
            *self
                .grants
                .entry(Bytes::copy_from_slice(payload))
                .or_default() |= node_bit;
            self.wake_all();
        } else if payload.len() == 33 && payload[16] == b'g' {
            // A grant for one named waiter (the fair lock's: its name, then the grant): written
            // down as above, and only that waiter woken.
            if self.grants.len() >= MAX_GRANTS {
                self.grants.clear();
            }
            *self
                .grants
                .entry(Bytes::copy_from_slice(&payload[16..]))
                .or_default() |= node_bit;
            if let Some(named) = self.named.get(&payload[..16]) {
                named.notify_waiters();
            }
        } else if let Some(named) = self.named.get(payload) {
            named.notify_waiters();
        }
    }

    pub(super) fn wake_all(&self) {
        self.notify.notify_waiters();
        for named in self.named.values() {
            named.notify_waiters();
        }
    }
}

impl Hub {
    pub(super) fn channels(&self) -> MutexGuard<'_, HashMap<Bytes, Channel>> {
        self.channels.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn unsubscribe(&self, channel: &[u8]) {
        for conn in &self.conns {
            conn.queue(b"UNSUBSCRIBE", channel);
        }
    }

    /// Unsubscribes the lingering channels idle long enough and still unused.
    pub(super) fn sweep(&self, channels: &mut HashMap<Bytes, Channel>) {
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
    pub(super) fn out(&self) -> MutexGuard<'_, BytesMut> {
        self.out.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn queue(&self, verb: &[u8], channel: &[u8]) {
        encode_args(&mut self.out(), &[verb, channel]);
        self.wake.notify_one();
    }

    /// A subscription confirmed after a reconnect: counts one of those re-sent off, true while
    /// any were left (its waiters are then woken, see [`Conn::resubscribing`]).
    pub(super) fn rejoin(&self) -> bool {
        self.resubscribing
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }
}
