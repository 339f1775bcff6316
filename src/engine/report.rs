//! What the operator's calls return ([`Redlock::inspect`](crate::Redlock::inspect),
//! [`Redlock::force_release`](crate::Redlock::force_release),
//! [`Redlock::nodes_status`](crate::Redlock::nodes_status)): plain data with `Debug`, and no lock
//! value anywhere (the nodes never send one back).

use std::time::Duration;

use crate::error::NodeError;
pub use crate::protocol::inspect::KeyState;

/// One resource as the nodes hold it, from one read-only round.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Inspection {
    /// The resource, as given.
    pub resource: Vec<u8>,
    /// One entry per node, in configuration order.
    pub nodes: Vec<NodeInspection>,
    /// Votes a majority needs, as for an acquire (`N/2 + 1`).
    pub quorum: usize,
    /// Voting nodes that answered "held".
    pub held_on: usize,
    /// Voting nodes that answered "free".
    pub free_on: usize,
    /// What the voting nodes say together.
    pub verdict: Verdict,
}

/// Whether a resource is locked, by the same majority rule as an acquire: only voting nodes count
/// (not quarantined, not silenced by the clock guard, and answering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Held (an exclusive holder or live readers) on a majority.
    Held,
    /// Free on a majority: an acquire could win it.
    Free,
    /// Neither: too many nodes did not answer or do not vote, or they disagree.
    Undecided,
}

/// One node's answer to an inspection.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NodeInspection {
    /// The node's address, without credentials.
    pub node: String,
    /// Why this node's answer does not count now ([`NodeError::Quarantined`],
    /// [`NodeError::ClockJump`]); `None`: it votes.
    pub not_voting: Option<NodeError>,
    /// What the node holds, or why it did not say (timeout, disconnected, an ACL refusal).
    pub state: Result<KeyState, NodeError>,
}

/// What a forced release did, per node.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ForceRelease {
    /// One entry per node: how many of the lock's keys (resource key, reader set, write intent) it
    /// deleted, or why it did not answer.
    pub nodes: Vec<Result<u64, NodeError>>,
    /// Nodes that answered (deleted or found nothing).
    pub answered: usize,
    /// Nodes that held something and deleted it.
    pub deleted_on: usize,
}

/// One node's connection and vote, as this engine sees it now.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NodeStatus {
    /// The node's address, without credentials.
    pub node: String,
    /// Whether its connection is up.
    pub connected: bool,
    /// Whether its answers count toward quorums now.
    pub votes: bool,
    /// The smoothed round-trip estimate (engine's own connections; `None` before the first reply
    /// and for nodes carried by fred).
    pub rtt: Option<Duration>,
    /// The server's identity as last read (`INFO server` in the handshake).
    pub identity: Option<ServerInfo>,
    /// Crashed-node quarantine.
    pub quarantine: QuarantineState,
    /// The clock guard silences the node for this much longer (its wall clock jumped forward).
    pub clock_silenced_for: Option<Duration>,
    /// The URL says `?durable=true`.
    pub durable_claim: bool,
    /// Whether the lock user may run scripts there, as the last handshake found (`None`: not
    /// connected; nodes carried by fred always say yes, unchecked). Without scripts only the
    /// exclusive lock without a holder label works, on native commands (Valkey 9).
    pub scripts: Option<bool>,
    /// Why the last connect failed, or the protocol error that closed the connection.
    pub last_error: Option<NodeError>,
    /// A Redis Cluster node set: each shard master as the engine routes to it now (its own vote,
    /// quarantine and clock guard decide the locks whose keys are in its slots). Empty otherwise.
    pub shards: Vec<ShardStatus>,
    /// A Redis Cluster node set (engine's own connections): the redirects its shards' replies
    /// asked for and the engine followed.
    pub redirects: Option<Redirects>,
}

/// One shard master of a cluster node set, as [`NodeStatus::shards`] lists it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ShardStatus {
    /// How many of the 16384 hash slots the engine routes to it now.
    pub slots: usize,
    /// Its connection and vote, as a standalone node's (`node` is the master's address; its own
    /// `shards` is empty).
    pub status: NodeStatus,
}

/// Redirects followed for one cluster node set since the engine started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Redirects {
    /// `MOVED`: the slot had moved; the map was updated and the command sent to its new master.
    pub moved: u64,
    /// `ASK`: the slot was migrating and the key already on the target; sent there after `ASKING`.
    pub ask: u64,
    /// `TRYAGAIN`: a multi-key command whose keys a migration had split; sent again shortly.
    pub tryagain: u64,
}

/// A server's identity as a handshake read it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerInfo {
    /// `run_id`: changes at every restart.
    pub run_id: String,
    /// `uptime_in_seconds` when it was read.
    pub uptime: Duration,
    /// How long ago it was read.
    pub read_ago: Duration,
    /// The durable claim was checked and not refuted (its votes skip the quarantine).
    pub durable: bool,
}

/// Where one node stands with the crashed-node quarantine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum QuarantineState {
    /// Quarantine is off for this engine.
    Off,
    /// Old enough (or durable): it votes as far as quarantine is concerned.
    Clear,
    /// Too young, or restarted: no vote for this much longer.
    For(Duration),
    /// Its identity was never read or not re-read since its connection dropped: no vote until it is.
    Unidentified,
}
