//! Multi-resource locks: several resources as one lock, all or none on each node.
//!
//! For callers that need two rows at once: taking them one by one in different orders deadlocks, and
//! holding one while retrying the other wastes its validity. One script per node sets every key or
//! none, so a node never grants half a lock; the quorum and validity rules are those of a single lock.

use std::collections::HashSet;
use std::time::Duration;

use crate::addr::Topology;
use crate::algo::retry::Wait;
use crate::algo::value::LockValue;
use crate::engine::Redlock;
use crate::error::LockError;
use crate::kinds::base::BASE;
use crate::lock::Lock;
use crate::protocol::cmd::{script_cmd, Args, Cmd, Keys, Op, Script, MAX_SCRIPT_KEYS};
use crate::protocol::scripts::HOLDS_ALL;
use crate::protocol::spec::{Kind, Spec, Target};

/// Several resources, one owner, all or none on each node.
pub(crate) static MULTI: Spec = Spec {
    name: "multi",
    code: b'm',
    acquire: acquire_multi_cmd,
    release: &RELEASE_MULTI,
    release_notify: &RELEASE_MULTI,
    extend: &EXTEND_MULTI,
    holds: &HOLDS_ALL,
    extends_first_key: false,
    marks: &[],
    // One queue per resource: a lock spanning several would wait in all of them.
    queues_locally: false,
    hands_off: false,
    multi_resource: true,
    scripts: &[&ACQUIRE_MULTI, &RELEASE_MULTI, &EXTEND_MULTI],
    inspect: &[],
    ..BASE
};

fn acquire_multi_cmd(keys: &Keys, value: LockValue, ttl_ms: u64, _: u64) -> Cmd {
    script_cmd(&ACQUIRE_MULTI, keys, value, Args::of(&[ttl_ms]))
}

impl Redlock {
    /// Acquires every resource in `resources` as one lock for `ttl`, retrying like
    /// [`acquire`](Self::acquire). Release and extend it like any lock: they act on all its resources.
    ///
    /// The list stays `&[&[u8]]` (not generic like the single-resource methods): only a known element
    /// type lets `&[b"account:1", b"acct:22"]`, byte strings of different lengths, coerce.
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
    #[deprecated(
        since = "0.2.0",
        note = "use `redlock.lock_many(resources).ttl(ttl)`: a `LockGuard`, released on drop"
    )]
    pub async fn acquire_many(
        &self,
        resources: &[&[u8]],
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        let target = self.multi_target(resources)?;
        self.core().acquire(target, ttl, Wait::Configured).await
    }

    /// The target of a lock over every resource in `resources`.
    pub(crate) fn multi_target(&self, resources: &[&[u8]]) -> Result<Target, LockError> {
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
        for &resource in resources {
            if !seen.insert(resource) {
                return Err(LockError::InvalidInput(format!(
                    "resource {:?} is listed twice",
                    String::from_utf8_lossy(resource)
                )));
            }
            keys.push(self.core().key(resource, b"")?);
        }
        // A cluster runs the all-or-none script only if every key is in one hash slot: say so here,
        // not as a CROSSSLOT failure on one node.
        let clustered = self
            .core()
            .settings()
            .nodes
            .iter()
            .any(|n| n.topology == Topology::Cluster);
        if clustered && !crate::algo::keys::one_slot(&keys) {
            return Err(LockError::InvalidInput(
                "on a Redis Cluster node the resources of one lock must share a hash tag, \
                 e.g. {order:7}:items and {order:7}:payment"
                    .into(),
            ));
        }
        self.core().check_scripting(&MULTI)?;
        Ok(Target {
            kind: Kind::new(&MULTI, 0),
            keys: Keys::Many(keys.into()),
        })
    }
}

/// Multi-resource acquire: set every key (PX `ARGV[2]`) or none, atomically on this node.
pub(crate) static ACQUIRE_MULTI: Script = Script {
    source: "for _, k in ipairs(KEYS) do if redis.call('EXISTS', k) == 1 then return -1 end end \
for _, k in ipairs(KEYS) do redis.call('SET', k, ARGV[1], 'PX', ARGV[2]) end return 1",
    sha1: "f69de666a49b4d05c67f379e529aa25649363d2e",
    resend: false,
    op: Op::Own,
};

/// Multi-resource release: delete each key that holds our value.
pub(crate) static RELEASE_MULTI: Script = Script {
    source: "local mine, other = 0, 0 \
for _, k in ipairs(KEYS) do local v = redis.call('GET', k) \
if v == ARGV[1] then redis.call('DEL', k) mine = mine + 1 elseif v ~= false then other = other + 1 end end \
if other > 0 then return -1 elseif mine == #KEYS then return 1 else return 0 end",
    sha1: "78c6f83903604553c9a162a05318091066ff6109",
    resend: true,
    op: Op::Own,
};

/// Multi-resource extend: `PEXPIRE` every key, only if every key holds our value.
pub(crate) static EXTEND_MULTI: Script = Script {
    source: "local gone = 0 \
for _, k in ipairs(KEYS) do local v = redis.call('GET', k) \
if v == false then gone = gone + 1 elseif v ~= ARGV[1] then return -1 end end \
if gone > 0 then return 0 end \
for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, ARGV[2]) end return 1",
    sha1: "d59efcad97f753e7e1f17de0f553a80570ae0de6",
    resend: true,
    op: Op::Own,
};
