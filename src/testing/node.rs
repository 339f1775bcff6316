//! [`MemoryNode`]: one in-process node, and the fault hooks a service's tests drive it with.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use super::keyspace::Data;
use super::listener::{listen, Listening};
use super::shared::Shared;
use crate::algo::keys::{key, KeyFormat};

/// One memory node: a RESP server on `127.0.0.1` that keeps its keys in memory and runs the
/// engine's Lua scripts in a real Lua 5.1, as Redis does. Get one from
/// [`MemoryNodes::node`](super::MemoryNodes::node); it stops when its [`MemoryNodes`](super::MemoryNodes)
/// is dropped.
///
/// Its hooks put it in the states a real node can be in, so a test can check what a service does
/// then. They act at once, as seen by the next command the node runs.
#[derive(Debug)]
pub struct MemoryNode {
    shared: Arc<Shared>,
    port: u16,
    /// Cancelled when the handle is dropped: ends every listening life of the node.
    life: CancellationToken,
    listening: tokio::sync::Mutex<Option<Listening>>,
}

impl MemoryNode {
    /// Starts a node on a free port.
    pub(crate) async fn launch() -> std::io::Result<Self> {
        let life = CancellationToken::new();
        let shared = Arc::new(Shared::new(0));
        let (listening, port) = listen(shared.clone(), 0, &life).await?;
        shared.state().identity.port = port;
        Ok(Self {
            shared,
            port,
            life,
            listening: tokio::sync::Mutex::new(Some(listening)),
        })
    }

    /// `redis://127.0.0.1:<port>`: the node's URL for [`Config::nodes`](crate::Config::nodes).
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The port it listens on (the same after [`stop`](Self::stop) and [`start`](Self::start)).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The node's `run_id` for this life (`INFO server`): [`restart_empty`](Self::restart_empty)
    /// makes a new one, which is how the engine tells a restarted node from one that was only
    /// unreachable.
    pub fn run_id(&self) -> String {
        self.shared.state().identity.run_id.clone()
    }

    /// Makes `key` vanish now, as at the end of its TTL: for a test of what a holder does when its
    /// lock's key expires under it on this node. The key is removed whether it had a TTL or not;
    /// `true` if it was there.
    pub fn expire_now(&self, key: impl AsRef<[u8]>) -> bool {
        let mut state = self.shared.state();
        state.db.begin();
        state.db.keys.remove(key.as_ref())
    }

    /// Expires now every key of `resource`'s lock that has a TTL, as if its TTL had run out on this
    /// node: the lock key of every kind and each kind's keys beside it (readers, permits, queue,
    /// waiter list, holder label). A fence counter, which has no TTL, stays, as it does on a real
    /// node. `prefix` is [`Config::key_prefix`](crate::Config::key_prefix) (`b"redlock:"` by
    /// default); keys as [`KeyFormat::Tagged`] builds them, the default. How many keys it removed.
    pub fn expire_resource(&self, prefix: impl AsRef<[u8]>, resource: impl AsRef<[u8]>) -> usize {
        let (prefix, resource) = (prefix.as_ref(), resource.as_ref());
        let suffixes = crate::kinds::catalog().keys().iter().map(|s| s.name);
        let keys: Vec<Bytes> = std::iter::once(&b""[..])
            .chain(suffixes)
            .filter_map(|suffix| key(KeyFormat::Tagged, prefix, resource, suffix).ok())
            .collect();
        let mut state = self.shared.state();
        state.db.begin();
        keys.iter()
            .filter(|k| {
                let timed = state.db.keys.get(k).is_some_and(|e| e.expires_at.is_some());
                timed && state.db.keys.remove(k)
            })
            .count()
    }

    /// Removes every key (`FLUSHALL`): for a test of what a holder does when a node lost its data
    /// without restarting (an operator's flush, a failover to an empty replica).
    pub fn flush(&self) {
        self.shared.state().db.keys.clear();
    }

    /// Stops answering, as a server stopped with `SIGSTOP` (a long GC pause, a frozen VM):
    /// connections stay open, new ones are accepted, and commands wait, unanswered, until
    /// [`resume`](Self::resume). Its clock runs on, so keys whose TTL ends meanwhile are gone
    /// when it resumes. For tests of timeouts, of a quorum without this node, and of a holder
    /// paused past its TTL. An engine takes a node that owes it a reply and answers nothing for
    /// one to two `connect_timeout`s (at least a second each) for gone, and reconnects: past that,
    /// the commands it sent before fail on its side, and whether the node runs them at
    /// `resume` depends on whether it had read them yet.
    pub fn pause(&self) {
        self.shared.paused.send_replace(true);
    }

    /// Answers again after [`pause`](Self::pause): the waiting commands run, in order.
    pub fn resume(&self) {
        self.shared.paused.send_replace(false);
    }

    /// Closes every connection and refuses new ones (a crashed process, a partition that resets
    /// connections) until [`start`](Self::start). Keys and identity are kept: see
    /// [`restart_empty`](Self::restart_empty) for a restart that loses them. Returns once the
    /// connections are closed.
    pub async fn stop(&self) {
        let listening = self.listening.lock().await.take();
        if let Some(listening) = listening {
            listening.stop().await;
        }
        self.shared.state().db.channels.clear();
    }

    /// Listens again on the same port after [`stop`](Self::stop), with the keys it had (those whose
    /// TTL ended meanwhile are gone) and the same `run_id`. Does nothing on a running node.
    ///
    /// # Errors
    /// The port could not be bound again (another process took it meanwhile).
    pub async fn start(&self) -> std::io::Result<()> {
        let mut listening = self.listening.lock().await;
        if listening.is_none() {
            let (again, _) = listen(self.shared.clone(), self.port, &self.life).await?;
            *listening = Some(again);
        }
        Ok(())
    }

    /// Stops the node and starts it again as a fresh process without persistence: no keys, no
    /// cached scripts, a new `run_id`, uptime 0. For tests of the engine's crashed-node quarantine
    /// ([`Config::quarantine`](crate::Config::quarantine)) and of a lock lost with a majority's data.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub async fn restart_empty(&self) -> std::io::Result<()> {
        self.stop().await;
        self.shared.state().restart_empty();
        self.start().await
    }

    /// Steps the node's wall clock forward by `by`, as an operator's or NTP's step on a real server:
    /// `TIME` jumps, and every key expires `by` earlier than its TTL said. For tests of the clock-jump
    /// guard ([`Config::clock_guard`](crate::Config::clock_guard)) and of a lock lost early.
    pub fn step_clock_forward(&self, by: Duration) {
        self.shared.state().db.clock.step(micros(by));
    }

    /// Steps the node's wall clock back by `by`: `TIME` goes back and keys live `by` longer than
    /// their TTL said.
    pub fn step_clock_back(&self, by: Duration) {
        self.shared.state().db.clock.step(-micros(by));
    }

    /// The node's live keys, sorted: for a test's assertions on what a lock left behind.
    pub fn keys(&self) -> Vec<Vec<u8>> {
        let mut state = self.shared.state();
        state.db.begin();
        let mut keys: Vec<Vec<u8>> = state
            .db
            .keys
            .live_keys()
            .iter()
            .map(|k| k.to_vec())
            .collect();
        keys.sort();
        keys
    }

    /// The value of the string at `key`; `None` when it is missing or holds another type.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Option<Vec<u8>> {
        let mut state = self.shared.state();
        state.db.begin();
        match state.db.keys.get(key.as_ref()) {
            Some(entry) => match &entry.data {
                Data::Str(v) => Some(v.to_vec()),
                _ => None,
            },
            None => None,
        }
    }
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

impl Drop for MemoryNode {
    fn drop(&mut self) {
        self.life.cancel();
    }
}
