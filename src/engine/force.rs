//! [`Redlock::force_release`]: an operator breaking a lock whose holder is gone for good.

use std::sync::Arc;

use super::inspect::gather;
use super::report::ForceRelease;
use super::Redlock;
use crate::algo::quorum::quorum;
use crate::error::{LockError, NodeError};
use crate::protocol::cmd::{Cmd, Keys, Reply};

impl Redlock {
    /// **Breaks the lock**: deletes `resource`'s lock on every node whatever its value — the
    /// resource key, a read-write lock's readers and write intent, the holder label, a fair lock's
    /// holder's place in its queue (the waiters' places stay) — and wakes waiters in other
    /// processes. For an operator clearing a lock whose holder is gone for good.
    ///
    /// **This breaks mutual exclusion for the current holder**, if there is one: it keeps running
    /// while the next client takes the lock. Its own release or extend then fails with
    /// [`LockError::NotOwner`] or [`LockError::AlreadyExpired`] (a renewed lock reports itself
    /// lost at its next renewal), but the work it did in between overlapped with the next holder's.
    /// Use fencing tokens where that matters.
    ///
    /// **The fence counter is kept**, on purpose: fencing tokens must keep increasing across holders,
    /// and a storage system that has seen the broken holder's token `t` must still see a larger one
    /// from the next holder. A deleted counter would restart the next proposal from the clock
    /// component alone (see [`Redlock::acquire_fenced`]), which is larger only if the clocks agree;
    /// kept, the next commit goes above `t` on every node of its majority. The waiters' mark is kept
    /// too (it is theirs, and expires by itself).
    ///
    /// Sent to every node, quarantined ones too (their copy of the lock must go as well). Counted in
    /// `redlock_force_releases_total`.
    ///
    /// # Errors
    /// [`LockError::InvalidInput`] for an invalid resource name; [`LockError::QuorumNotReached`]
    /// when fewer than a majority of the nodes answered (the others may still hold it; run it again).
    pub async fn force_release(
        &self,
        resource: impl AsRef<[u8]>,
    ) -> Result<ForceRelease, LockError> {
        let core = self.core();
        let resource = resource.as_ref();
        // The keys the kinds declare, by what a forced release does with them (see `Catalog::force_release`).
        let forcing = core.catalog().forced();
        let mut keys = vec![core.key(resource, b"")?];
        for suffix in forcing.suffixes() {
            keys.push(core.key(resource, suffix)?);
        }
        let cmd = Cmd::ScriptBytes {
            script: core.catalog().force_release(),
            keys: Keys::Many(Arc::from(keys)),
            args: Arc::from(forcing.args()),
        };
        metrics::counter!("redlock_force_releases_total").increment(1);
        tracing::warn!(
            resource = %String::from_utf8_lossy(resource),
            "force_release: deleting the lock's keys on every node whatever their value"
        );
        let replies = gather(core, &cmd).await;
        let nodes: Vec<Result<u64, NodeError>> = replies
            .into_iter()
            .map(|reply| match reply {
                Ok(Reply::Int(n)) if n >= 0 => Ok(n as u64),
                Ok(other) => Err(other.unexpected("force release script")),
                Err(e) => Err(e),
            })
            .collect();
        let answered = nodes.iter().filter(|n| n.is_ok()).count();
        let deleted_on = nodes
            .iter()
            .filter(|n| matches!(n, Ok(d) if *d > 0))
            .count();
        let needed = quorum(nodes.len());
        if answered < needed {
            let failures = nodes
                .iter()
                .enumerate()
                .filter_map(|(index, n)| Some((index, n.clone().err()?)))
                .collect();
            return Err(LockError::QuorumNotReached {
                ok: answered,
                needed,
                failures,
            });
        }
        Ok(ForceRelease {
            nodes,
            answered,
            deleted_on,
        })
    }
}
