//! The router of one cluster node set: its slot map, the topology reads that renew it, and what a
//! redirect does (the `MOVED`/`ASK`/`TRYAGAIN` rules and their safety are in the module doc of
//! `crate::transport::cluster`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::map::{slot_of, Map, Shard};
use super::topology::{self, ShardInfo};
use crate::addr::{NodeAddr, Topology};
use crate::algo::clock::JumpLog;
use crate::error::NodeError;
use crate::protocol::cmd::Cmd;
use crate::transport::client::NodeClient;
use crate::transport::connect::ConnectOptions;
use crate::transport::pipeline::redirect::{self, Waiters};
use crate::transport::pipeline::{PipelineNode, Route};

/// Most redirects one command follows: a slot moves once per migration, and an `ASK` is answered
/// by its target; more means the members disagree, and the vote fails instead of looping.
pub(super) const MAX_REDIRECTS: u8 = 5;

/// How often the topology is read while every shard is up, and while one is down (a failover
/// promotes a replica within a few cluster node timeouts; its slots follow within this).
const REFRESH_IDLE: Duration = Duration::from_secs(2);
const REFRESH_DEGRADED: Duration = Duration::from_millis(250);

/// Redirects followed, for operators and tests.
#[derive(Debug, Default)]
pub(super) struct Redirects {
    pub(super) moved: AtomicU64,
    pub(super) ask: AtomicU64,
    pub(super) tryagain: AtomicU64,
}

#[derive(Debug)]
pub(super) struct Router {
    /// The node set's URL: its members, credentials and TLS.
    pub(super) seed: NodeAddr,
    pub(super) opts: ConnectOptions,
    map: RwLock<Arc<Map>>,
    /// Read the topology now (a `MOVED` to a master not in the map).
    stale: Notify,
    pub(super) shutdown: CancellationToken,
    me: Weak<Router>,
    /// Where every shard's connection writes its forward clock jumps (see `NodeClient::report_jumps`).
    jumps: Mutex<Option<(Arc<JumpLog>, usize)>>,
    /// Every server ever listed as a replica: one that becomes a master was promoted.
    replicas: Mutex<std::collections::HashSet<(String, u16)>>,
    pub(super) redirects: Redirects,
    /// Why the last topology read got no map from any member (cleared when one is installed).
    map_error: Mutex<Option<NodeError>>,
}

impl Router {
    pub(super) fn new(seed: NodeAddr, opts: ConnectOptions) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            seed,
            opts,
            map: RwLock::new(Arc::new(Map::empty())),
            stale: Notify::new(),
            shutdown: CancellationToken::new(),
            me: me.clone(),
            jumps: Mutex::new(None),
            replicas: Mutex::default(),
            redirects: Redirects::default(),
            map_error: Mutex::new(None),
        })
    }

    pub(super) fn map(&self) -> Arc<Map> {
        self.map.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The connection that carries `cmd` now: its slot's shard master's.
    pub(super) fn route(&self, cmd: &Cmd) -> Option<Arc<PipelineNode>> {
        let map = self.map.read().unwrap_or_else(|p| p.into_inner());
        let shard = match slot_of(cmd) {
            Some(slot) => map.shard_of(slot),
            None => map.shards.first(),
        };
        shard.map(|s| s.conn.clone())
    }

    /// Every shard's connection reports its clock jumps to `log` as node `index`, also shards that
    /// join later.
    pub(super) fn report_jumps(&self, log: Arc<JumpLog>, index: usize) {
        for shard in &self.map().shards {
            shard.conn.report_jumps(log.clone(), index);
        }
        *self.jumps.lock().unwrap_or_else(|p| p.into_inner()) = Some((log, index));
    }

    /// The address of one member, with the node set's credentials and TLS.
    fn member(&self, (host, port): &(String, u16)) -> NodeAddr {
        NodeAddr {
            host: host.clone(),
            port: *port,
            db: 0,
            topology: Topology::Standalone,
            more_hosts: Vec::new(),
            durable: false,
            ..self.seed.clone()
        }
    }

    /// Why no member gave a slot map at the last read, if none did: with no map yet, what every
    /// command's vote fails with (a wrong CA, a lock user without `+cluster|shards` and
    /// `+cluster|slots`), rather than a bare "not connected".
    pub(super) fn map_error(&self) -> Option<NodeError> {
        self.map_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Reads the topology from the first member that answers (the current masters, then the URL's
    /// members) and installs it. Keeps the old map if none answers, and the first member's error.
    pub(super) async fn refresh(&self) {
        let current = self.map();
        let mut members: Vec<(String, u16)> = current
            .shards
            .iter()
            .filter(|s| s.conn.is_connected())
            .map(|s| s.master.clone())
            .collect();
        members.push((self.seed.host.clone(), self.seed.port));
        members.extend(self.seed.more_hosts.iter().cloned());
        members.dedup();
        let mut first_error = None;
        for member in members {
            match topology::fetch(&self.member(&member), &self.opts).await {
                Ok(shards) if !shards.is_empty() => {
                    *self.map_error.lock().unwrap_or_else(|p| p.into_inner()) = None;
                    return self.install(shards, &current).await;
                }
                Ok(_) => tracing::debug!(node = %self.seed, "a member knows no slots yet"),
                Err(e) => {
                    tracing::debug!(node = %self.seed, error = %e, "topology read failed");
                    first_error.get_or_insert(e);
                }
            }
        }
        *self.map_error.lock().unwrap_or_else(|p| p.into_inner()) = first_error;
    }

    /// Builds the map for `shards`, keeping the connections of masters already known and opening
    /// the others. A master that was not one in the map before is quarantined before anything can
    /// be routed to it if it was ever listed as a replica, or serves slots at once (a failover hands
    /// a promoted replica its master's slots); one first seen with no slots that was never a replica
    /// (a node just added) can only gain keys by migration, and is judged by its uptime like any
    /// node (see the module doc).
    async fn install(&self, shards: Vec<ShardInfo>, previous: &Map) {
        let promoted: Vec<bool> = {
            let mut seen = self.replicas.lock().unwrap_or_else(|p| p.into_inner());
            let promoted = shards
                .iter()
                .map(|s| seen.contains(&s.master) || !s.ranges.is_empty())
                .collect();
            seen.extend(shards.iter().flat_map(|s| s.replicas.iter().cloned()));
            promoted
        };
        let weak: Weak<dyn redirect::Router> = self.me.clone();
        let opts = &self.opts;
        let opened = shards.into_iter().zip(promoted).map(|(info, promoted)| {
            let known = previous.find(&info.master).map(|(_, s)| s.conn.clone());
            let (addr, weak) = (self.member(&info.master), weak.clone());
            async move {
                let conn = match known {
                    Some(conn) => conn,
                    None => {
                        let conn = Arc::new(PipelineNode::connect_shard(addr, opts, weak).await);
                        if !previous.shards.is_empty() && promoted {
                            conn.quarantine_now();
                        }
                        if let Some((log, index)) =
                            self.jumps.lock().unwrap_or_else(|p| p.into_inner()).clone()
                        {
                            conn.report_jumps(log, index);
                        }
                        conn
                    }
                };
                Shard {
                    master: info.master,
                    conn,
                    ranges: info.ranges,
                }
            }
        });
        let shards = futures::future::join_all(opened).await;
        if self.shutdown.is_cancelled() {
            return;
        }
        *self.map.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(Map::new(shards));
    }

    /// Reads the topology every [`REFRESH_IDLE`], every [`REFRESH_DEGRADED`] while a shard is
    /// down, and at once when a redirect names a master the map does not have. Ends with the node.
    pub(super) async fn watch(router: Weak<Self>, shutdown: CancellationToken) {
        loop {
            let Some(this) = router.upgrade() else { return };
            let map = this.map();
            let degraded =
                map.shards.is_empty() || map.shards.iter().any(|s| !s.conn.is_connected());
            let every = if degraded {
                REFRESH_DEGRADED
            } else {
                REFRESH_IDLE
            };
            drop(map);
            // Holding `this` while asleep is fine: dropping the node cancels `shutdown`.
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = this.stale.notified() => {}
                _ = tokio::time::sleep(every) => {}
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = this.refresh() => {}
            }
        }
    }
}

impl redirect::Router for Router {
    fn redirect(&self, why: &str, cmd: Cmd, waiters: Waiters, route: Route) {
        if route.hops >= MAX_REDIRECTS {
            return waiters.fail(NodeError::Server(format!(
                "{why} (after {MAX_REDIRECTS} redirects: the members disagree on the slot)"
            )));
        }
        let next = Route {
            hops: route.hops + 1,
            redirected: true,
        };
        let mut words = why.split_ascii_whitespace();
        let kind = words.next();
        if kind == Some("TRYAGAIN") {
            // A multi-key command whose keys are split by a migration in progress: it did not run.
            // Sent again shortly, where the map then says.
            self.redirects.tryagain.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("redlock_cluster_redirects_total", "node" => self.seed.to_string(), "kind" => "tryagain").increment(1);
            let me = self.me.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                match me.upgrade().and_then(|r| r.route(&cmd)) {
                    Some(conn) => conn.forward(&cmd, waiters, next, false),
                    None => waiters.fail(NodeError::Disconnected),
                }
            });
            return;
        }
        let slot = words.next().and_then(|s| s.parse::<u16>().ok());
        let target = words.next().and_then(split_target);
        let (Some(slot), Some(target)) = (slot, target) else {
            return waiters.fail(NodeError::Protocol(format!("unreadable redirect: {why}")));
        };
        let map = self.map();
        let Some((index, shard)) = map.find(&target) else {
            // A master the map does not have (a failover, a new node): read the topology now; this
            // command's vote fails (it did not run; a release is re-sent by the engine).
            self.stale.notify_one();
            return waiters.fail(NodeError::Disconnected);
        };
        if kind == Some("MOVED") {
            self.redirects.moved.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("redlock_cluster_redirects_total", "node" => self.seed.to_string(), "kind" => "moved").increment(1);
            map.point(slot, index);
            shard.conn.forward(&cmd, waiters, next, false);
        } else {
            self.redirects.ask.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("redlock_cluster_redirects_total", "node" => self.seed.to_string(), "kind" => "ask").increment(1);
            shard.conn.forward(&cmd, waiters, next, true);
        }
    }
}

/// `host:port` of a redirect (the host may be an IPv6 address; the port is after the last colon).
pub(super) fn split_target(target: &str) -> Option<(String, u16)> {
    let (host, port) = target.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host.to_string(), port.parse().ok()?))
}
