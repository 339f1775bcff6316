//! [`Leadership`]: an election won — the renewed fenced lock on the election's name, its term, and
//! the record that publishes its value. Resigns on drop, as a guard releases.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::keys::{check_value, padded, ElectionKeys};
use super::scripts::{LEADER_CLEAR, LEADER_WRITE};
use crate::algo::quorum::Vote;
use crate::algo::verdict::owner_error;
use crate::api::renewed::RenewedLock;
use crate::engine::fanout::send_all;
use crate::engine::Redlock;
use crate::error::LockError;
use crate::protocol::cmd::{Cmd, Keys};

/// Leadership of an election, from [`crate::Election::campaign`]: held (renewed by the watchdog)
/// until [`resign`](Self::resign)ed or dropped.
///
/// While it is valid no other campaign of the election holds a valid leadership, and
/// [`term`](Self::term) is larger than every earlier leader's: carry it in every write the leader
/// makes, to a store that refuses a lower one ([`crate::FencedStore`]), so a leader that paused
/// past its validity cannot overwrite its successor's work. Select on [`lost`](Self::lost) beside
/// the leader's work.
///
/// Dropping it resigns in the background: its record is removed and its lock released on every
/// node, without waiting and without a runtime.
#[must_use = "dropping a Leadership resigns at once"]
pub struct Leadership {
    engine: Redlock,
    name: Bytes,
    keys: ElectionKeys,
    term: u64,
    /// `None` only once resigned.
    lock: Option<RenewedLock>,
    /// The last revision handed out (1: the election's own write).
    revisions: AtomicU64,
    /// The latest value written, with its revision.
    value: Mutex<(u64, Bytes)>,
}

impl Leadership {
    /// Publishes `value` as the leader's of the won `lock` (revision 1). On failure the leadership
    /// is dropped: its lock released, whatever was written removed.
    pub(super) async fn elect(
        engine: Redlock,
        name: Bytes,
        keys: ElectionKeys,
        lock: RenewedLock,
        value: Bytes,
    ) -> Result<Self, LockError> {
        let term = lock
            .fencing_token()
            .expect("an election's lock is fenced: it has a token");
        let leadership = Self {
            engine,
            name,
            keys,
            term,
            lock: Some(lock),
            revisions: AtomicU64::new(1),
            value: Mutex::new((1, value.clone())),
        };
        leadership.write(&value, 1).await?;
        Ok(leadership)
    }

    fn lock(&self) -> &RenewedLock {
        self.lock
            .as_ref()
            .expect("a leadership holds its lock until it resigns")
    }

    /// The term: this leadership's fencing token, committed on a majority, larger than every
    /// earlier leader's of the election (see [`crate::Lock::fencing_token`]; below 2^53).
    pub fn term(&self) -> u64 {
        self.term
    }

    /// The election's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// The value published last (the campaign's, or the latest [`proclaim`](Self::proclaim)ed).
    pub fn value(&self) -> Bytes {
        self.latest().1
    }

    /// The revision of [`value`](Self::value): 1 for the campaign's, one more per proclaim.
    pub fn revision(&self) -> u64 {
        self.latest().0
    }

    fn latest(&self) -> (u64, Bytes) {
        self.value.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether the leadership is still valid: not lost, validity left. Check it before each step
    /// of the leader's work (and let the store check the term: a process can pause at any point).
    pub fn is_valid(&self) -> bool {
        self.lock().is_valid()
    }

    /// Validity left now; zero once lost.
    pub fn remaining(&self) -> Duration {
        if self.lock().is_lost() {
            return Duration::ZERO;
        }
        self.lock().remaining()
    }

    /// The current end of validity (moves forward with every renewal).
    pub fn valid_until(&self) -> Instant {
        self.lock().valid_until()
    }

    /// Whether the leadership has been lost.
    pub fn is_lost(&self) -> bool {
        self.lock().is_lost()
    }

    /// A token cancelled when the leadership is lost, to hand to the leader's work.
    pub fn lost_token(&self) -> CancellationToken {
        self.lock().lost_token()
    }

    /// Completes when the leadership is lost, and says why: [`LockError::Lost`] when its validity
    /// ended (renewals failed, or could not run in time), [`LockError::NotOwner`] when the nodes
    /// said it is gone before that (a forced release, evicted or expired keys), [`LockError::Closed`]
    /// when the engine was shut down.
    pub async fn lost(&self) -> LockError {
        self.lock().lost().await;
        self.why_lost()
    }

    fn why_lost(&self) -> LockError {
        if self.engine.core().is_closed() {
            LockError::Closed
        } else if Instant::now() < self.lock().valid_until() {
            // Declared lost with validity left: a renewal or a check found the keys gone.
            LockError::NotOwner
        } else {
            LockError::Lost
        }
    }

    /// Asks every node whether the leadership's lock is still held, as
    /// [`crate::RenewedLock::is_held`]: a "no" declares it lost at once.
    ///
    /// # Errors
    /// [`LockError::QuorumNotReached`]: too few nodes answered to tell.
    pub async fn is_held(&self) -> Result<bool, LockError> {
        self.lock().is_held().await
    }

    /// Publishes `value` in place of the current one, on a majority, in the same term (no new
    /// election): observers see the leader again with the new value and a higher revision.
    ///
    /// # Errors
    /// [`LockError::InvalidInput`] for a value a campaign would refuse (nothing is sent);
    /// [`LockError::Lost`] or [`LockError::NotOwner`] when the leadership is lost (the value was
    /// not published on a majority); [`LockError::QuorumNotReached`] when too few nodes answered
    /// (it may show on some: a later proclaim replaces it).
    pub async fn proclaim(&self, value: impl AsRef<[u8]>) -> Result<(), LockError> {
        let value = Bytes::copy_from_slice(value.as_ref());
        check_value(&value)?;
        let revision = self.revisions.fetch_add(1, Ordering::Relaxed) + 1;
        self.write(&value, revision).await?;
        let mut latest = self.value.lock().unwrap_or_else(|p| p.into_inner());
        if revision > latest.0 {
            *latest = (revision, value);
        }
        Ok(())
    }

    /// Writes the record at `revision` on a majority, within the validity.
    async fn write(&self, value: &Bytes, revision: u64) -> Result<(), LockError> {
        let lock = self.lock();
        let (cmd, held, ttl) = {
            let entry = lock.entry();
            let st = entry.lock();
            let Some(held) = st.lock.as_ref() else {
                return Err(LockError::AlreadyExpired);
            };
            let args = [
                Bytes::copy_from_slice(held.value().as_bytes()),
                padded(self.term),
                padded(revision),
                value.clone(),
            ];
            let cmd = Cmd::ScriptBytes {
                script: &LEADER_WRITE,
                keys: self.keys.both(),
                args: Arc::from(args),
            };
            (cmd, held.held(), held.ttl())
        };
        if lock.is_lost() {
            return Err(self.why_lost());
        }
        let core = self.engine.core();
        let valid_until = lock.valid_until();
        // No round slot before the validity ends: it is over by then.
        let _slot = core.admit(Some(valid_until)).await.map_err(|e| match e {
            LockError::Overloaded { .. } => LockError::Lost,
            other => other,
        })?;
        let deadline = core.round_deadline(Instant::now(), ttl, Some(valid_until));
        let tally = core.fan_out(&cmd, deadline, Vote::of_script).await;
        match tally.won() {
            true if lock.is_valid() => Ok(()),
            true => Err(LockError::Lost),
            false => Err(owner_error(tally, held)),
        }
    }

    /// Resigns: removes the leader's record and releases its lock on every node, and waits for
    /// both (each node up to `connect_timeout`). Observers see no leader until the next campaign
    /// wins.
    ///
    /// # Errors
    /// As [`crate::RenewedLock::release`]: after a loss, typically [`LockError::NotOwner`] or
    /// [`LockError::AlreadyExpired`] (nothing of this leadership is left to remove).
    pub async fn resign(mut self) -> Result<(), LockError> {
        let lock = self
            .lock
            .take()
            .expect("a leadership holds its lock until it resigns");
        // Waited for here, unlike on drop: a node that never ran the removal answers its first one
        // with NOSCRIPT and gets it again as EVAL behind the release, which a process that exits
        // as soon as it has resigned (`redlock elect`) would otherwise never send.
        let cleared = self.clear(&lock);
        let released = lock.release().await;
        cleared.await;
        released
    }

    /// Queues the removal of this leader's record on every node, ahead of its lock's release on
    /// the same connections, and returns the wait for its replies (each bounded by
    /// `connect_timeout`; dropping it leaves the removal queued). A record left behind (a node
    /// that did not take it) names a lock that is gone, which no reader shows, and the next
    /// leader overwrites it.
    fn clear(&self, lock: &RenewedLock) -> impl Future<Output = ()> + use<> {
        let core = self.engine.core();
        let mut pending = Vec::new();
        let entry = lock.entry();
        if let Some(held) = entry.lock().lock.as_ref() {
            let cmd = Cmd::ScriptBytes {
                script: &LEADER_CLEAR,
                keys: Keys::One(self.keys.record.clone()),
                args: Arc::from([Bytes::copy_from_slice(held.value().as_bytes())]),
            };
            send_all(core.nodes(), &cmd, |_, reply| pending.push(reply));
        }
        let until = Instant::now() + core.settings().connect.connect_timeout;
        async move {
            let replies = pending
                .into_iter()
                .map(|reply| tokio::time::timeout_at(until, reply));
            futures::future::join_all(replies).await;
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            drop(self.clear(&lock)); // queued; not waited for
                                     // Released as a dropped renewed lock is: queued now, without a runtime.
            drop(lock);
        }
    }
}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("name", &String::from_utf8_lossy(&self.name))
            .field("term", &self.term)
            .field("revision", &self.revision())
            .field(
                "valid",
                &self.lock.as_ref().is_some_and(RenewedLock::is_valid),
            )
            .finish_non_exhaustive()
    }
}
