//! [`Redlock::nodes_status`]: each node's connection, vote and what the engine last learned of it,
//! read from the connections without sending anything; for a cluster node set, the same per shard
//! master, and the redirects followed.

use tokio::time::Instant;

use super::report::{NodeStatus, QuarantineState, Redirects, ServerInfo, ShardStatus};
use super::Redlock;
use crate::transport::LinkStatus;

impl Redlock {
    /// Every node's state as this engine sees it now (configuration order): connected, voting,
    /// round-trip estimate, `run_id` and uptime as last read (and how long ago), quarantine and for
    /// how much longer, the clock guard's silence, the durable claim, the last connect or protocol
    /// error; for a Redis Cluster node set, each shard master's own ([`NodeStatus::shards`]) and the
    /// redirects followed. Nothing is sent to the nodes; addresses carry no credentials.
    pub fn nodes_status(&self) -> Vec<NodeStatus> {
        let core = self.core();
        let now = Instant::now();
        core.nodes()
            .iter()
            .zip(&core.settings().nodes)
            .map(|(node, addr)| {
                let mut link = node.status();
                let shards = std::mem::take(&mut link.shards)
                    .into_iter()
                    .map(|shard| ShardStatus {
                        slots: shard.slots,
                        status: status(
                            shard.master,
                            shard.link,
                            shard.votes,
                            shard.rtt,
                            false,
                            now,
                        ),
                    })
                    .collect();
                let redirects = link.redirects.map(|[moved, ask, tryagain]| Redirects {
                    moved,
                    ask,
                    tryagain,
                });
                let connected = link.connected;
                let mut status = status(
                    addr.to_string(),
                    link,
                    node.votes(),
                    node.rtt_smoothed(),
                    addr.durable,
                    now,
                );
                status.scripts = connected.then(|| node.profile().scripting);
                status.shards = shards;
                status.redirects = redirects;
                status
            })
            .collect()
    }
}

/// One link as the operator sees it.
fn status(
    node: String,
    link: LinkStatus,
    votes: bool,
    rtt: Option<std::time::Duration>,
    durable_claim: bool,
    now: Instant,
) -> NodeStatus {
    let view = link.quarantine;
    let quarantine = match &view {
        None => QuarantineState::Off,
        Some(v) if !v.on => QuarantineState::Off,
        Some(v) if v.unidentified => QuarantineState::Unidentified,
        Some(v) => match v.until {
            Some(until) => QuarantineState::For(until.saturating_duration_since(now)),
            None => QuarantineState::Clear,
        },
    };
    let identity = view.and_then(|v| v.last).map(|(id, at)| ServerInfo {
        run_id: id.run_id,
        uptime: id.uptime,
        read_ago: now.saturating_duration_since(at),
        durable: id.durable,
    });
    NodeStatus {
        node,
        connected: link.connected,
        votes,
        rtt,
        identity,
        quarantine,
        clock_silenced_for: link
            .silenced_until
            .map(|until| until.saturating_duration_since(now)),
        durable_claim,
        scripts: None,
        last_error: link.last_error,
        shards: Vec::new(),
        redirects: None,
    }
}
