//! Multi-resource locks: several resources as one lock, all or none on each node.
//!
//! For callers that need two rows at once: taking them one by one in different orders deadlocks, and
//! holding one while retrying the other wastes its validity. One script per node sets every key or
//! none, so a node never grants half a lock; the quorum and validity rules are those of a single lock.

use std::collections::HashSet;
use std::time::Duration;

use crate::addr::Topology;
use crate::error::LockError;
use crate::kind::Kind;
use crate::lock::Lock;
use crate::redlock::Target;
use crate::transport::{Keys, MAX_SCRIPT_KEYS};
use crate::Redlock;

impl Redlock {
    /// Acquires every resource in `resources` as one lock for `ttl`, retrying like
    /// [`acquire`](Self::acquire). Release and extend it like any lock: they act on all its resources.
    ///
    /// Cost: one round trip per attempt (one script per node), like a single-resource lock.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire); [`LockError::Contended`] if any of the resources is held elsewhere;
    /// [`LockError::InvalidInput`] for an empty list, more than 16 resources, a duplicate, an invalid
    /// resource name, or (with a Redis Cluster among the nodes) resources without one shared hash tag.
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// use std::time::Duration;
    /// let lock = redlock.acquire_many(&[b"account:1", b"account:2"], Duration::from_secs(5)).await?;
    /// // ... move money between the two accounts ...
    /// redlock.release(lock).await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_many(
        &self,
        resources: &[&[u8]],
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        let target = self.multi_target(resources)?;
        self.acquire_target(target, ttl, true).await
    }

    /// One attempt of [`acquire_many`](Self::acquire_many).
    pub async fn try_acquire_many(
        &self,
        resources: &[&[u8]],
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        let target = self.multi_target(resources)?;
        self.acquire_target(target, ttl, false).await
    }

    fn multi_target(&self, resources: &[&[u8]]) -> Result<Target, LockError> {
        if resources.is_empty() {
            return Err(LockError::InvalidInput("the resource list is empty".into()));
        }
        if resources.len() > MAX_SCRIPT_KEYS {
            return Err(LockError::InvalidInput(format!(
                "{} resources in one lock, at most {MAX_SCRIPT_KEYS} are supported",
                resources.len()
            )));
        }
        let mut seen = HashSet::with_capacity(resources.len());
        let mut keys = Vec::with_capacity(resources.len());
        for resource in resources {
            if !seen.insert(*resource) {
                return Err(LockError::InvalidInput(format!(
                    "resource {:?} is listed twice",
                    String::from_utf8_lossy(resource)
                )));
            }
            keys.push(self.key(resource, b"")?);
        }
        // A cluster runs the all-or-none script only if every key is in one hash slot: say so here,
        // not as a CROSSSLOT failure on one node.
        let clustered = self
            .settings()
            .nodes
            .iter()
            .any(|n| n.topology == Topology::Cluster);
        if clustered && !crate::keys::one_slot(&keys) {
            return Err(LockError::InvalidInput(
                "on a Redis Cluster node the resources of one lock must share a hash tag, \
                 e.g. {order:7}:items and {order:7}:payment"
                    .into(),
            ));
        }
        Ok(Target {
            kind: Kind::Multi,
            keys: Keys::Many(keys.into()),
        })
    }
}
