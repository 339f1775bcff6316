//! [`NodeClient`], the one trait every node connection implements, and what it reports
//! ([`LinkStatus`]).

use std::sync::Arc;

use crate::algo::clock::JumpLog;
use crate::error::NodeError;
use crate::protocol::cmd::Cmd;
use crate::protocol::server::Profile;

use super::Pending;

/// One node's connection, whatever carries it.
pub(crate) trait NodeClient: Send + Sync + std::fmt::Debug {
    /// Queues `cmd` on this node's connection now and returns a future of its reply.
    ///
    /// The future has no deadline of its own: the caller bounds all nodes of a round with one timer.
    /// Dropping it discards the reply; the command still runs.
    fn send(&self, cmd: &Cmd) -> Pending;

    /// [`send`](Self::send) with the command already RESP-encoded by the caller as `profile`
    /// renders it, so a round encodes once per profile, not once per node. A connection whose
    /// profile is no longer `profile` (it reconnected to another server meanwhile) encodes `cmd`
    /// itself; transports that do not write RESP themselves ignore `encoded`.
    fn send_encoded(&self, cmd: &Cmd, encoded: &[u8], profile: Profile) -> Pending {
        let _ = (encoded, profile);
        self.send(cmd)
    }

    /// How this connection renders operations now (see `crate::protocol::server`): what its last
    /// handshake learned of the server. Cheap: the fan-out asks it for every node of a round.
    fn profile(&self) -> Profile {
        Profile::default()
    }

    /// Writes what is queued on this node's connection to its socket now, from the calling thread
    /// and without the runtime, waiting until `until` at most while the socket is full. For callers
    /// that cannot count on the runtime to run the connection's writer again: a guard dropped while
    /// its thread panics, the engine's last handle dropped (both often just before the runtime shuts
    /// down). Does nothing where the transport cannot: TLS connections, fred, non-unix systems.
    fn flush_now(&self, _until: std::time::Instant) {}

    /// Whether the node's connection is up right now.
    fn is_connected(&self) -> bool;

    /// Why this node can never be served as configured (an address this transport cannot use), if
    /// so. Not a connect failure: those are retried in the background.
    fn setup_error(&self) -> Option<NodeError> {
        None
    }

    /// Whether the node's answers count toward quorums now (false while it is quarantined).
    fn votes(&self) -> bool;

    /// Why this node's answers do not count now, for a node that does not [`vote`](Self::votes):
    /// first that it cannot be reached (the connect failure's own cause: refused, timed out, TLS,
    /// auth), since a node that is down is also unverified and so quarantined, and an operator
    /// told "restarted" goes looking for a restart instead of a dead server; then the clock guard;
    /// then the quarantine. Called only on that path, so it may take the connection's lock.
    fn silence(&self) -> NodeError {
        if !self.is_connected() {
            self.status().last_error.unwrap_or(NodeError::Disconnected)
        } else if self.clock_jumped() {
            NodeError::ClockJump
        } else {
            NodeError::Quarantined
        }
    }

    /// Whether the clock guard has silenced this node (its wall clock jumped forward). Cheap: the
    /// fan-out asks it for every reply.
    fn clock_jumped(&self) -> bool {
        false
    }

    /// From now on, writes this node's forward clock jumps into `log` as node `index` (transports
    /// with the clock guard), so locks that counted its vote can tell.
    fn report_jumps(&self, _log: Arc<JumpLog>, _index: usize) {}

    /// The server's `run_id`, when known (read with quarantine on).
    fn run_id(&self) -> Option<String>;

    /// Requests queued or in flight on this node's connection (0 for transports that do not say).
    fn backlog(&self) -> usize {
        0
    }

    /// When this node's connection last delivered a reply (to anyone); `None` if unknown. A round
    /// keeps waiting past its node deadline for a node that answered since the round began.
    fn last_reply(&self) -> Option<tokio::time::Instant> {
        None
    }

    /// Whether this node takes multi-key scripts over unrelated keys ([`Cmd::ExtendMany`]): a
    /// standalone node does; a Cluster node set would answer `CROSSSLOT`.
    fn batches(&self) -> bool {
        false
    }

    /// This node's round-trip estimate; `None` for transports that do not measure it. The default
    /// node deadline follows its bound.
    fn rtt(&self) -> Option<&crate::algo::rtt::RttEstimate> {
        None
    }

    /// The bound of [`rtt`](Self::rtt) (a cluster node set: its slowest shard's).
    fn rtt_bound(&self) -> Option<std::time::Duration> {
        self.rtt()?.bound()
    }

    /// The smoothed estimate of [`rtt`](Self::rtt) (a cluster node set: its slowest shard's).
    fn rtt_smoothed(&self) -> Option<std::time::Duration> {
        self.rtt()?.smoothed()
    }

    /// The connection that carries `cmd`, when this node is several servers (a cluster node set:
    /// its slot's shard master); `None`: this node itself. The fan-out sends through it and reads
    /// its vote, clock guard and last reply, so each shard votes by the same rule as a standalone
    /// node.
    fn route(&self, _cmd: &Cmd) -> Option<Arc<dyn NodeClient>> {
        None
    }

    /// What the connection knows of its node, read-only, for operators (`Redlock::nodes_status`).
    fn status(&self) -> LinkStatus {
        LinkStatus {
            connected: self.is_connected(),
            ..LinkStatus::default()
        }
    }
}

/// One node's connection state as [`NodeClient::status`] reports it.
#[derive(Debug, Clone, Default)]
pub(crate) struct LinkStatus {
    pub(crate) connected: bool,
    pub(crate) quarantine: Option<crate::algo::quarantine::QuarantineView>,
    /// The clock guard silences the node until then.
    pub(crate) silenced_until: Option<tokio::time::Instant>,
    /// Why the last connect failed, or the protocol error that closed the connection.
    pub(crate) last_error: Option<NodeError>,
    /// A cluster node set: each shard master's link.
    pub(crate) shards: Vec<ShardLink>,
    /// A cluster node set: redirects followed (`MOVED`, `ASK`, `TRYAGAIN`).
    pub(crate) redirects: Option<[u64; 3]>,
}

/// One shard master of a cluster node set, for [`LinkStatus::shards`].
#[derive(Debug, Clone)]
pub(crate) struct ShardLink {
    /// `redis://host:port` of the master (no credentials).
    pub(crate) master: String,
    /// Slots routed to it now.
    pub(crate) slots: usize,
    pub(crate) votes: bool,
    pub(crate) rtt: Option<std::time::Duration>,
    pub(crate) link: LinkStatus,
}
