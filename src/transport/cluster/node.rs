//! The cluster node set as a [`NodeClient`]: every command goes to its slot's shard, and the
//! fan-out judges that shard's vote ([`NodeClient::route`]); the whole-set answers (connected,
//! votes, backlog) are for the signals and admission control.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::ClusterNode;
use crate::algo::clock::JumpLog;
use crate::error::NodeError;
use crate::protocol::cmd::Cmd;
use crate::protocol::server::Profile;
use crate::transport::client::{LinkStatus, NodeClient, ShardLink};
use crate::transport::pending::Pending;

impl ClusterNode {
    fn unserved(&self) -> Pending {
        // No shard serves the slot now (the map not read yet, or a master down with no replica and
        // no failover yet): this node's vote fails for this command. With no map at all, with why
        // none could be read: a refused certificate or permission is then in the caller's error.
        let no_map = self.router.map().shards.is_empty();
        let cause = no_map.then(|| self.router.map_error()).flatten();
        Pending::ready(Err(cause.unwrap_or(NodeError::Disconnected)))
    }

    fn each<T>(&self, f: impl FnMut(&crate::transport::pipeline::PipelineNode) -> T) -> Vec<T> {
        let map = self.router.map();
        map.shards.iter().map(|s| &*s.conn).map(f).collect()
    }
}

impl NodeClient for ClusterNode {
    fn flush_now(&self, until: std::time::Instant) {
        self.each(|shard| shard.flush_now(until));
    }

    fn send(&self, cmd: &Cmd) -> Pending {
        match self.router.route(cmd) {
            Some(conn) => conn.send(cmd),
            None => self.unserved(),
        }
    }

    fn send_encoded(&self, cmd: &Cmd, encoded: &[u8], profile: Profile) -> Pending {
        match self.router.route(cmd) {
            Some(conn) => conn.send_encoded(cmd, encoded, profile),
            None => self.unserved(),
        }
    }

    fn route(&self, cmd: &Cmd) -> Option<Arc<dyn NodeClient>> {
        self.router
            .route(cmd)
            .map(|conn| conn as Arc<dyn NodeClient>)
    }

    fn is_connected(&self) -> bool {
        let up = self.each(|c| c.is_connected());
        !up.is_empty() && up.into_iter().all(|c| c)
    }

    /// Every shard votes (a command's own vote is its shard's: [`NodeClient::route`]). With no
    /// map yet nothing holds the vote back: the commands fail as `Disconnected`.
    fn votes(&self) -> bool {
        self.each(|c| c.votes()).into_iter().all(|v| v)
    }

    fn clock_jumped(&self) -> bool {
        self.each(|c| c.clock_jumped()).into_iter().any(|j| j)
    }

    fn report_jumps(&self, log: Arc<JumpLog>, index: usize) {
        self.router.report_jumps(log, index);
    }

    fn run_id(&self) -> Option<String> {
        // Several servers: no one identity (duplicates across node sets are not detected).
        None
    }

    fn backlog(&self) -> usize {
        // Admission control compares it with `max_pending`, which bounds each shard's queue. Read
        // every round: no allocation.
        let map = self.router.map();
        map.shards
            .iter()
            .map(|s| s.conn.backlog())
            .max()
            .unwrap_or(0)
    }

    fn last_reply(&self) -> Option<Instant> {
        self.each(|c| c.last_reply()).into_iter().flatten().max()
    }

    fn batches(&self) -> bool {
        // One lock per extend call: a call over several locks' keys would span hash slots.
        false
    }

    fn rtt_bound(&self) -> Option<Duration> {
        self.each(|c| c.rtt_bound()).into_iter().flatten().max()
    }

    fn rtt_smoothed(&self) -> Option<Duration> {
        self.each(|c| c.rtt_smoothed()).into_iter().flatten().max()
    }

    fn status(&self) -> LinkStatus {
        let map = self.router.map();
        let scheme = if self.router.seed.tls {
            "rediss"
        } else {
            "redis"
        };
        let shards: Vec<ShardLink> = map
            .shards
            .iter()
            .enumerate()
            .map(|(index, s)| ShardLink {
                master: format!("{scheme}://{}:{}", s.master.0, s.master.1),
                slots: map.count(index),
                votes: s.conn.votes(),
                rtt: s.conn.rtt_smoothed(),
                link: s.conn.status(),
            })
            .collect();
        let connected = !shards.is_empty() && shards.iter().all(|s| s.link.connected);
        let r = &self.router.redirects;
        let read = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
        LinkStatus {
            connected,
            // The shard held back longest stands for the set; each one's own is in `shards`.
            quarantine: shards
                .iter()
                .filter_map(|s| s.link.quarantine.clone())
                .max_by_key(|q| (q.unidentified, q.until)),
            silenced_until: shards.iter().filter_map(|s| s.link.silenced_until).max(),
            last_error: shards
                .iter()
                .find_map(|s| s.link.last_error.clone())
                .or_else(|| self.router.map_error()),
            redirects: Some([read(&r.moved), read(&r.ask), read(&r.tryagain)]),
            shards,
        }
    }
}
