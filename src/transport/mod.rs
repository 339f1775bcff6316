//! How the algorithm reaches a node: one small trait, [`NodeClient`], with three implementations.
//!
//! - [`pipeline`]: the engine's own connection (default). One TCP connection per node; every queued request
//!   is written with the others in one write, replies complete requests in FIFO order.
//! - `cluster`: a Redis Cluster node set (`redis-cluster://`) on the same pipelined connections, one
//!   per shard master, each command routed by its key's hash slot, `MOVED`/`ASK` followed without
//!   replay, votes and quarantine per shard (its module doc holds the argument).
//! - `fred` (feature `fred`): the fred client, for comparison (`Transport::Fred`, also for a
//!   cluster) and for Sentinel node sets (a `redis-sentinel://` URL always uses it).
//!
//! The contract all keep, because the lock's safety depends on it:
//! - [`NodeClient::send`] queues the command **now**; the returned [`Pending`] only waits for the reply.
//!   Release-after-failure relies on this: it fires the release and does not wait.
//! - A command is never replayed after a reconnect: in-flight commands fail with
//!   [`NodeError::ConnectionLost`] (or the protocol error that closed the connection) and the quorum
//!   logic decides.
//! - A reply of the wrong type for its command is that node's failure, never a vote ([`Reply::kind`]
//!   names the type in the error; the pipeline's input is bounded by `bounded`).
//! - `NOSCRIPT` is handled inside: `EVALSHA` first, `EVAL` once on `NOSCRIPT` (the script did not run, so
//!   sending it again is not a replay).

pub(crate) mod bounded;
mod client;
mod cluster;
pub(crate) mod connect;
#[cfg(feature = "fred")]
pub(crate) mod fred;
mod pending;
pub(crate) mod pipeline;
mod resp;
mod stall;
pub(crate) mod subscriber;
pub(crate) use client::{LinkStatus, NodeClient};
pub(crate) use connect::ConnectOptions;
pub(crate) use pending::Pending;

use crate::addr::Topology;
use crate::protocol::cmd::Cmd;
use crate::protocol::server::Profile;

/// Encodes `cmd` as `profile` renders it ([`Profile::render`]).
pub(crate) fn encode(out: &mut bytes::BytesMut, cmd: &Cmd, profile: Profile) {
    match profile.render(cmd) {
        Some(native) => resp::encode_native(out, &native),
        None => resp::encode_cmd(out, cmd, false),
    }
}

thread_local! {
    /// The current round's encoded command; reused, so a round allocates nothing for it.
    static ENCODED: std::cell::RefCell<bytes::BytesMut> =
        std::cell::RefCell::new(bytes::BytesMut::with_capacity(256));
}

/// One command on its way to every node of a round: each node gets it as its own server takes it
/// (its `Profile`), encoded again only where a node's profile differs from the one before it
/// (never, while all render the scripts). See [`with_round`].
pub(crate) struct Round<'a> {
    cmd: &'a Cmd,
    encoded: &'a mut bytes::BytesMut,
    rendered: Option<Profile>,
}

impl Round<'_> {
    /// Queues the round's command on `node`'s connection.
    pub(crate) fn send(&mut self, node: &dyn NodeClient) -> Pending {
        let profile = node.profile();
        if self.rendered != Some(profile) {
            self.encoded.clear();
            encode(self.encoded, self.cmd, profile);
            self.rendered = Some(profile);
        }
        node.send_encoded(self.cmd, self.encoded, profile)
    }
}

/// Runs `send` with a [`Round`] of `cmd`, whose encoding lives in a per-thread buffer: `send` must
/// queue on every node and return, not await, while it is borrowed.
pub(crate) fn with_round<T>(cmd: &Cmd, send: impl FnOnce(&mut Round<'_>) -> T) -> T {
    ENCODED.with_borrow_mut(|encoded| {
        send(&mut Round {
            cmd,
            encoded,
            rendered: None,
        })
    })
}

/// Which implementation carries the node connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[non_exhaustive]
pub enum Transport {
    /// The engine's own pipelined connection per node (the fast path). Default.
    #[default]
    Pipeline,
    /// The fred client (feature `fred`) for every node, Cluster node sets included: for
    /// comparison. Sentinel node sets are carried by fred under either setting.
    #[cfg(feature = "fred")]
    Fred,
}

/// Opens a node client of the chosen kind. Never fails for an unreachable node: it starts disconnected and
/// reconnects in the background; waits at most `connect_timeout` for the first connect.
pub(crate) async fn connect(
    kind: Transport,
    addr: crate::addr::NodeAddr,
    opts: &ConnectOptions,
) -> std::sync::Arc<dyn NodeClient> {
    // A Sentinel node set follows its master through fred; a cluster through the engine's own
    // connections, or fred's cluster client under `Transport::Fred` (for comparison).
    match (&addr.topology, kind) {
        #[cfg(feature = "fred")]
        (Topology::Sentinel { .. }, _) | (Topology::Cluster, Transport::Fred) => {
            return std::sync::Arc::new(fred::FredNode::connect(addr, opts).await)
        }
        (Topology::Cluster, _) => {
            return std::sync::Arc::new(cluster::ClusterNode::connect(addr, opts).await)
        }
        _ => {}
    }
    match kind {
        Transport::Pipeline => {
            std::sync::Arc::new(pipeline::PipelineNode::connect(addr, opts).await)
        }
        #[cfg(feature = "fred")]
        Transport::Fred => std::sync::Arc::new(fred::FredNode::connect(addr, opts).await),
    }
}
