//! A node's pub/sub channels: which connections subscribed to what, and the delivery of a message
//! onto each subscriber's queue (its connection writes it, `super::conn`).

use std::collections::{BTreeMap, HashMap};

use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc::UnboundedSender;

use super::reply::Reply;

/// Subscribers by channel: a connection's id and its outgoing queue.
#[derive(Debug, Default)]
pub(crate) struct Channels {
    subscribers: HashMap<Bytes, BTreeMap<u64, UnboundedSender<Bytes>>>,
}

impl Channels {
    /// Subscribes connection `conn` to `channel`; whether it was new.
    pub(crate) fn subscribe(
        &mut self,
        conn: u64,
        queue: &UnboundedSender<Bytes>,
        channel: Bytes,
    ) -> bool {
        self.subscribers
            .entry(channel)
            .or_default()
            .insert(conn, queue.clone())
            .is_none()
    }

    /// Unsubscribes connection `conn` from `channel`; whether it was subscribed.
    pub(crate) fn unsubscribe(&mut self, conn: u64, channel: &[u8]) -> bool {
        let Some(subs) = self.subscribers.get_mut(channel) else {
            return false;
        };
        let was = subs.remove(&conn).is_some();
        if subs.is_empty() {
            self.subscribers.remove(channel);
        }
        was
    }

    /// Removes every subscription (a node that stops drops its connections).
    pub(crate) fn clear(&mut self) {
        self.subscribers.clear();
    }

    /// Sends `message` to every subscriber of `channel`; how many there were.
    pub(crate) fn publish(&mut self, channel: &[u8], message: &[u8]) -> usize {
        let Some(subs) = self.subscribers.get(channel) else {
            return 0;
        };
        let mut frame = BytesMut::new();
        Reply::Array(vec![
            Reply::bulk(&b"message"[..]),
            Reply::bulk(Bytes::copy_from_slice(channel)),
            Reply::bulk(Bytes::copy_from_slice(message)),
        ])
        .encode(&mut frame);
        let frame = frame.freeze();
        subs.values()
            .filter(|queue| queue.send(frame.clone()).is_ok())
            .count()
    }
}
