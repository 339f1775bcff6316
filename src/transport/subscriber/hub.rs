//! What the notifier and its connection tasks share: the channel registry ([`Hub`]), each
//! channel's waiters ([`Channel`]), and each node's (un)subscriptions on their way to its
//! connection ([`Conn`]).

use std::collections::HashMap;
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
    /// Some node confirmed the subscription. Until then a release can go unheard, so the first
    /// confirmation also wakes the waiters: one immediate retry covers a release that landed before.
    pub(super) active: bool,
    /// Kept subscribed a while without users; since when it has had none.
    pub(super) linger: bool,
    pub(super) idle_since: Option<Instant>,
}

/// One node's subscriber connection: commands to write, and the signal to write them.
#[derive(Debug)]
pub(super) struct Conn {
    pub(super) addr: NodeAddr,
    pub(super) out: Mutex<BytesMut>,
    pub(super) wake: Notify,
}

impl Channel {
    /// Wakes the waiters a message is for: all for an empty payload, else the one it names.
    pub(super) fn wake(&self, payload: &[u8]) {
        if payload.is_empty() {
            self.wake_all();
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
}
