//! [`Redlock::inspect`]: one read-only round over every key a resource can have, and the verdict the
//! voting nodes give together (the acquire's majority rule). Also `gather`, the plain fan-out the
//! operator's calls share: every node asked at once, every answer waited for (or its deadline),
//! quarantined nodes included.

use std::sync::Arc;

use bytes::Bytes;
use tokio::time::Instant;

use super::core::Core;
use super::fanout::send_all;
use super::report::{Inspection, KeyState, NodeInspection, Verdict};
use super::Redlock;
use crate::algo::quorum::quorum;
use crate::error::{LockError, NodeError};
use crate::protocol::catalog::Catalog;
use crate::protocol::cmd::{Cmd, Keys, NodeResult, Reply};
use crate::transport::NodeClient;

impl Redlock {
    /// Reads what every node holds for `resource`, in one read-only round (one script call per
    /// node, quarantined nodes included): held or free, time to live, whether this engine took it,
    /// the kind of lock, readers, a waiting writer's intent, the fence counter, waiters' marks and
    /// the holder label; then the verdict of the voting nodes by the acquire's majority rule.
    ///
    /// Nothing is changed and no lock value leaves the nodes: "ours" is decided on the node, by
    /// comparing the value's first bytes with this engine's tag. Each node has up to
    /// `connect_timeout` to answer; one that does not is reported with its error.
    ///
    /// # Errors
    /// [`LockError::InvalidInput`] for an empty or too long resource name. A node that fails is not
    /// an error: its entry says why.
    pub async fn inspect(&self, resource: impl AsRef<[u8]>) -> Result<Inspection, LockError> {
        let core = self.core();
        let resource = resource.as_ref();
        let catalog = core.catalog();
        // Every key the kinds declare, each with its suffix beside it (see `crate::protocol::inspect`).
        let suffixes = catalog.keys();
        let mut keys = Vec::with_capacity(1 + suffixes.len());
        let mut args = Vec::with_capacity(1 + suffixes.len());
        keys.push(core.key(resource, b"")?);
        args.push(Bytes::copy_from_slice(&core.tag().0));
        for suffix in suffixes {
            keys.push(core.key(resource, suffix.name)?);
            args.push(Bytes::from_static(suffix.name));
        }
        let cmd = Cmd::ScriptBytes {
            script: catalog.inspect(),
            keys: Keys::Many(keys.into()),
            args: Arc::from(args),
        };
        let replies = gather(core, &cmd).await;
        let nodes: Vec<NodeInspection> = core
            .nodes()
            .iter()
            .zip(&core.settings().nodes)
            .zip(replies)
            .map(|((node, addr), reply)| NodeInspection {
                node: addr.to_string(),
                // A cluster: the shard that holds the resource's keys decides.
                not_voting: not_voting(node.route(&cmd).as_deref().unwrap_or(node.as_ref())),
                state: parse(reply, catalog),
            })
            .collect();
        let voting = || {
            nodes
                .iter()
                .filter(|n| n.not_voting.is_none())
                .filter_map(|n| n.state.as_ref().ok())
        };
        let held_on = voting().filter(|s| s.held).count();
        let free_on = voting().filter(|s| !s.held).count();
        let quorum = quorum(nodes.len());
        let verdict = if held_on >= quorum {
            Verdict::Held
        } else if free_on >= quorum {
            Verdict::Free
        } else {
            Verdict::Undecided
        };
        Ok(Inspection {
            resource: resource.to_vec(),
            nodes,
            quorum,
            held_on,
            free_on,
            verdict,
        })
    }
}

/// Why `node`'s answers do not count now, if they do not.
pub(crate) fn not_voting(node: &dyn NodeClient) -> Option<NodeError> {
    (!node.votes()).then(|| node.silence())
}

/// Sends `cmd` to every node at once (one admission slot) and waits for every reply, each bounded
/// by `connect_timeout`: the operator's calls want every node's answer, not an early majority.
pub(crate) async fn gather(core: &Core, cmd: &Cmd) -> Vec<NodeResult> {
    let until = Instant::now() + core.settings().connect.connect_timeout;
    gather_until(core, cmd, until).await
}

/// [`gather`], each reply bounded by `until`.
pub(crate) async fn gather_until(core: &Core, cmd: &Cmd, until: Instant) -> Vec<NodeResult> {
    // One round like any other; past capacity it goes ahead at the deadline rather than not at all.
    let _slot = core.admit(Some(until)).await.ok();
    let mut pending = Vec::with_capacity(core.nodes().len());
    send_all(core.nodes(), cmd, |_, reply| pending.push(reply));
    futures::future::join_all(pending.into_iter().map(|reply| async move {
        tokio::time::timeout_at(until, reply)
            .await
            .unwrap_or(Err(NodeError::Timeout))
    }))
    .await
}

/// Reads the inspect script's answer (`crate::protocol::inspect` has its fields).
pub(crate) fn parse(reply: NodeResult, catalog: &Catalog) -> Result<KeyState, NodeError> {
    match reply {
        Ok(Reply::Data(data)) => catalog.read_inspection(&data).ok_or_else(|| {
            NodeError::Protocol("inspect script: answer is not of its format".into())
        }),
        Ok(other) => Err(other.unexpected("inspect script")),
        Err(e) => Err(e),
    }
}
