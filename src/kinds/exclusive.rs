//! The exclusive lock: one resource, one owner. The hot path: its acquire is a plain `SET NX PX`, no
//! script; its release and extend are the shared single-key scripts (`crate::protocol::scripts`).
//! Waiters in other processes take the cross-process hand-off (`crate::protocol::handoff`).
//!
//! With a holder label (`Config::holder_label`) it takes its labeled form, [`LABELED`]: the label key
//! beside the lock, written by the acquire and kept alive by the extend.

use std::time::Duration;

use std::sync::Arc;

use bytes::Bytes;

use crate::algo::quorum::Vote;
use crate::algo::retry::Wait;
use crate::algo::value::LockValue;
use crate::engine::Redlock;
use crate::error::LockError;
use crate::kinds::base::BASE;
use crate::lock::Lock;
use crate::protocol::cmd::{Cmd, Keys, Op, Script};
use crate::protocol::handoff::PLAIN_HANDOFF;
use crate::protocol::native::NATIVE_COVERED;
use crate::protocol::spec::{Forced, Kind, Spec, Suffix};

/// The exclusive lock.
pub(crate) static EXCLUSIVE: Spec = Spec {
    name: "exclusive",
    code: b'x',
    acquire: set_nx_px,
    vote: Vote::of_set,
    labeled: Some(&LABELED),
    handoff: Some(&PLAIN_HANDOFF),
    // Every one has a native form: a plain lock works for a lock user without scripting.
    scripts: &NATIVE_COVERED,
    ..BASE
};

fn set_nx_px(keys: &Keys, value: LockValue, ttl_ms: u64, _: u64) -> Cmd {
    Cmd::SetNxPx {
        key: keys.as_slice()[0].clone(),
        value,
        ttl_ms,
    }
}

impl Redlock {
    /// Acquires `resource` for `ttl`, retrying with a random pause as configured.
    ///
    /// Each attempt sends `SET key value NX PX ttl` to all nodes at once and returns as soon as a majority
    /// is won or lost. A lock is returned only if a majority confirmed **and** the validity left
    /// (`ttl - elapsed - drift`) is at least the configured minimum. A failed attempt releases its key on
    /// every node (without waiting) before the pause.
    ///
    /// `resource` is any bytes: `"orders:42"`, `b"orders:42"`, a `Vec<u8>`. `ttl` is used in whole
    /// milliseconds (rounded down).
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// use std::time::Duration;
    /// let lock = redlock.acquire("orders:42", Duration::from_secs(10)).await?;
    /// // ... the work the lock protects ...
    /// redlock.release(lock).await?;
    /// let id = 43;
    /// let lock = redlock.acquire(format!("orders:{id}"), Duration::from_secs(10)).await?;
    /// redlock.release(lock).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancellation
    /// Dropping the future mid-attempt is safe: keys the attempt may have set are released in the
    /// background, best effort.
    ///
    /// # Errors
    /// [`LockError::Contended`], [`LockError::QuorumNotReached`] or [`LockError::ValidityExpired`] from
    /// the last attempt once retries are used up; [`LockError::Timeout`] when `acquire_timeout` passes;
    /// [`LockError::InvalidInput`] for an empty or too long resource or a TTL that is zero, below 1 ms, too
    /// large, or not above the node timeout.
    #[deprecated(
        since = "0.2.0",
        note = "use `redlock.lock(resource).ttl(ttl).wait(Wait::Configured)`: a `LockGuard`, released on drop (`.into_lock()` for a bare `Lock`)"
    )]
    pub async fn acquire(
        &self,
        resource: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        let target = self.core().target(exclusive(), resource.as_ref())?;
        self.core().acquire(target, ttl, Wait::Configured).await
    }

    /// One acquire attempt, no retries. Same guarantees and errors as [`acquire`](Self::acquire).
    #[deprecated(
        since = "0.2.0",
        note = "use `redlock.lock(resource).ttl(ttl).once()`: a `LockGuard`, released on drop"
    )]
    pub async fn try_acquire(
        &self,
        resource: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        let target = self.core().target(exclusive(), resource.as_ref())?;
        self.core().acquire(target, ttl, Wait::Once).await
    }
}

pub(crate) fn exclusive() -> Kind {
    Kind::new(&EXCLUSIVE, 0)
}

/// A labeled exclusive acquire: `SET NX PX` and, when it lands, the holder label key with the
/// value's digest and the label (PX `ARGV[3]`, the engine's `max_ttl`). KEYS: lock key, label key;
/// ARGV: value, TTL ms, label TTL ms, label. Answers 1 (set) or -1 (taken), like the other acquire
/// scripts; never resent as `EVAL` (see `Script::resend`).
pub(crate) static ACQUIRE_LABELED: Script = Script {
    source: "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then \
redis.call('SET', KEYS[2], redis.sha1hex(ARGV[1]) .. ARGV[4], 'PX', ARGV[3]) return 1 end \
return -1",
    sha1: "2b4760e79ad5e8db3e67d009d40fe8b9dfb4eef0",
    resend: false,
    op: Op::Own,
};

/// An exclusive lock with a holder label (`Config::holder_label`): [`EXCLUSIVE`]'s `labeled` form,
/// what `Core::target` makes of an exclusive target when the engine has a label. Its keys are the
/// resource key and the label key; its acquire is [`ACQUIRE_LABELED`] (`acquire_labeled`: the engine
/// passes the label), its extend
/// [`EXTEND_LABELED`], which keeps the label alive as long as the lock, so a lock renewed past
/// `max_ttl` still shows who holds it. The price: its renewals are not coalesced with other locks'.
/// Release, hand-off and local queueing are the exclusive lock's.
pub(crate) static LABELED: Spec = Spec {
    name: "exclusive",
    code: b'x',
    acquire: unlabeled_set,
    extend: &EXTEND_LABELED,
    extends_first_key: false,
    suffixes: &[Suffix {
        name: b":holder",
        forced: Forced::Deleted,
    }],
    acquire_labeled: Some(labeled_acquire),
    scripts: &[&ACQUIRE_LABELED, &EXTEND_LABELED],
    ..BASE
};

/// Never sent: the engine sends `acquire_labeled` for this kind, with its label.
/// (Were it sent, its `+OK` would not read as a vote of [`LABELED`]: a failed node, never a grant.)
fn unlabeled_set(keys: &Keys, value: LockValue, ttl_ms: u64, _: u64) -> Cmd {
    Cmd::SetNxPx {
        key: keys.as_slice()[0].clone(),
        value,
        ttl_ms,
    }
}

/// [`EXTEND`], and the label key (`KEYS[2]`) kept at least as long as the
/// lock.
pub(crate) static EXTEND_LABELED: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) \
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end return 1 \
elseif v == false then return 0 else return -1 end",
    sha1: "d19a7759723f95e08a0a2d6ff692c773c851a5be",
    resend: true,
    op: Op::Own,
};

/// The labeled acquire (see [`ACQUIRE_LABELED`]) on `keys` (the resource key, the label key).
pub(crate) fn labeled_acquire(
    keys: &Keys,
    value: LockValue,
    ttl_ms: u64,
    label_ttl_ms: u64,
    label: &Bytes,
) -> Cmd {
    Cmd::ScriptBytes {
        script: &ACQUIRE_LABELED,
        keys: keys.clone(),
        args: Arc::from([
            Bytes::copy_from_slice(value.as_bytes()),
            Bytes::from(ttl_ms.to_string()),
            Bytes::from(label_ttl_ms.max(ttl_ms).to_string()),
            label.clone(),
        ]),
    }
}
