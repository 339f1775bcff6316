//! [`Redlock::inspect`]: one read-only round over every key a resource can have, and the verdict the
//! voting nodes give together (the acquire's majority rule). Also `gather`, the plain fan-out the
//! operator's calls share: every node asked at once, every answer waited for (or its deadline),
//! quarantined nodes included.

use std::sync::Arc;
use std::time::Duration;

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
use crate::protocol::operator::INSPECT;
use crate::protocol::spec::LockKind;
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
        // Every key the kinds declare, each with its suffix beside it (see `INSPECT`).
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
            script: &INSPECT,
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

/// Reads the inspect script's answer (see [`INSPECT`] for its fields).
pub(crate) fn parse(reply: NodeResult, catalog: &Catalog) -> Result<KeyState, NodeError> {
    let data = match reply {
        Ok(Reply::Data(data)) => data,
        Ok(other) => return Err(other.unexpected("inspect script")),
        Err(e) => return Err(e),
    };
    let bad = || NodeError::Protocol("inspect script: answer is not of its format".into());
    let fields: Vec<&[u8]> = data.splitn(14, |&b| b == b'|').collect();
    let [kind_of_key, pttl, ours, code, readers, mine, readers_ttl, intent, fence, wait, permits, limit, queued, label] =
        fields[..]
    else {
        return Err(bad());
    };
    let int = |field: &[u8]| -> Result<i64, NodeError> {
        std::str::from_utf8(field)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)
    };
    let readers = u64::try_from(int(readers)?).map_err(|_| bad())?;
    let key_kind = match (kind_of_key, code) {
        (b"n", _) => None,
        (b"o", _) | (b"s", b"?") => Some(LockKind::FOREIGN),
        (b"s", [code]) => Some(catalog.by_code(*code).unwrap_or(LockKind::UNKNOWN)),
        (b"s", _) => Some(LockKind::UNKNOWN),
        _ => return Err(bad()),
    };
    // Readers hold the resource without its key: the kind whose holders share it.
    let readers_kind = catalog.shared().unwrap_or(LockKind::UNKNOWN);
    let kind = key_kind.or((readers > 0).then_some(readers_kind));
    let remaining = if key_kind.is_some() {
        ttl(int(pttl)?)
    } else {
        ttl(int(readers_ttl)?)
    };
    Ok(KeyState {
        held: kind.is_some(),
        kind,
        remaining,
        ours: ours == b"1" || int(mine)? > 0,
        readers,
        our_readers: u64::try_from(int(mine)?).map_err(|_| bad())?,
        write_intent: ttl(int(intent)?),
        fence: match fence {
            b"-" => None,
            digits => Some(
                std::str::from_utf8(digits)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(bad)?,
            ),
        },
        waiters: ttl(int(wait)?),
        permits: u64::try_from(int(permits)?).map_err(|_| bad())?,
        permit_limit: match limit {
            b"-" => None,
            k => Some(u64::try_from(int(k)?).map_err(|_| bad())?),
        },
        fair_waiters: u64::try_from(int(queued)?).map_err(|_| bad())?,
        label: (!label.is_empty()).then(|| String::from_utf8_lossy(label).into_owned()),
    })
}

/// A `PTTL` answer as a duration: `None` for a missing key (-2) or one without expiry (-1).
fn ttl(ms: i64) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}
