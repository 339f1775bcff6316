//! Read-write locks: many readers or one writer, with the quorum, validity, release-on-failure and
//! renewal rules of any lock.
//!
//! # Policy: writers first
//! A writer that finds readers records its **intent** on the node (its ticket, for one TTL). While an
//! intent is there, new readers are refused, so the current readers drain and the writer gets in: a
//! steady stream of readers cannot starve a writer. The intent survives the writer's retries (same
//! ticket) and is withdrawn when it gives up; if the writer dies, it expires after one TTL. The price:
//! under a steady stream of writers, readers wait (writer preference, as in most RW locks).
//!
//! # Keys per node
//! `prefix{resource}` (the writer's value), `prefix{resource}:rw:readers` (a sorted set: each reader's
//! value scored by its expiry on the node's clock) and `prefix{resource}:rw:intent`. A resource used
//! as a read-write lock should not also be used as a plain lock.
//!
//! Cost: one round trip per attempt for either side, like a plain lock; release and extend one each.

use std::time::Duration;

use crate::error::LockError;
use crate::kind::Kind;
use crate::lock::Lock;
use crate::Redlock;

pub(crate) const READERS_SUFFIX: &[u8] = b":rw:readers";
pub(crate) const INTENT_SUFFIX: &[u8] = b":rw:intent";

impl Redlock {
    /// Acquires a shared (reader) hold on `resource`, retrying like [`acquire`](Self::acquire).
    /// Granted while no writer holds or waits for the resource and fewer than `max_readers`
    /// (see [`crate::Config::max_readers`]) readers hold it. Release and extend it like any lock.
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// use std::time::Duration;
    /// let read = redlock.acquire_read(b"catalog", Duration::from_secs(5)).await?;
    /// // ... many readers may be here at once ...
    /// redlock.release(read).await?;
    /// let write = redlock.acquire_write(b"catalog", Duration::from_secs(5)).await?;
    /// // ... alone ...
    /// redlock.release(write).await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_read(&self, resource: &[u8], ttl: Duration) -> Result<Lock, LockError> {
        let target = self.target(self.read_kind(), resource)?;
        self.acquire_target(target, ttl, true).await
    }

    /// One attempt of [`acquire_read`](Self::acquire_read).
    pub async fn try_acquire_read(
        &self,
        resource: &[u8],
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        let target = self.target(self.read_kind(), resource)?;
        self.acquire_target(target, ttl, false).await
    }

    /// Acquires the exclusive (writer) hold on `resource`, retrying like [`acquire`](Self::acquire).
    /// Granted when no writer and no live reader holds it; while readers remain, new readers are held
    /// back (see the module's policy).
    pub async fn acquire_write(&self, resource: &[u8], ttl: Duration) -> Result<Lock, LockError> {
        let target = self.target(write_kind(), resource)?;
        self.acquire_target(target, ttl, true).await
    }

    /// One attempt of [`acquire_write`](Self::acquire_write). A refused attempt withdraws its intent.
    pub async fn try_acquire_write(
        &self,
        resource: &[u8],
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        let target = self.target(write_kind(), resource)?;
        self.acquire_target(target, ttl, false).await
    }

    fn read_kind(&self) -> Kind {
        Kind::Read {
            max_readers: u64::from(self.settings().max_readers),
        }
    }
}

fn write_kind() -> Kind {
    // Any value unique among concurrent writers of one resource will do: it only names an intent.
    Kind::Write {
        ticket: fastrand::u64(1..),
    }
}
