//! [`Lock`]: what a successful acquire returns.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::value::LockValue;

/// A lock held on a majority of the nodes until [`valid_until`](Lock::valid_until).
///
/// # Dropping a lock
/// `Drop` cannot await, so dropping a `Lock` does **not** release it: its keys stay on the nodes until
/// the TTL ends, and other clients wait until then. Call [`crate::Redlock::release`] when done.
///
/// The lock's value (its ownership secret) is private and never printed by `Debug`.
pub struct Lock {
    /// `prefix + resource`.
    pub(crate) key: Bytes,
    pub(crate) prefix_len: usize,
    pub(crate) value: LockValue,
    pub(crate) ttl: Duration,
    pub(crate) valid_until: Instant,
}

impl Lock {
    /// The resource name this lock was acquired for (without the key prefix).
    pub fn resource(&self) -> &[u8] {
        &self.key[self.prefix_len..]
    }

    /// The monotonic instant until which the lock is safe to rely on: `start + TTL - drift`, measured
    /// from the start of the acquire (or of the last successful extend). Past it, another client may hold
    /// the resource.
    pub fn valid_until(&self) -> Instant {
        self.valid_until
    }

    /// Validity left now; zero once expired.
    pub fn remaining(&self) -> Duration {
        self.valid_until.saturating_duration_since(Instant::now())
    }

    /// Whether the validity has not ended yet. Check it (or [`remaining`](Self::remaining)) before each
    /// step of work the lock protects: a process can pause for longer than the TTL at any point.
    pub fn is_valid(&self) -> bool {
        Instant::now() < self.valid_until
    }

    /// The TTL the keys were last set with.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }
}

impl fmt::Debug for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("resource", &String::from_utf8_lossy(self.resource()))
            .field("ttl", &self.ttl)
            .field("remaining", &self.remaining())
            .finish_non_exhaustive()
    }
}
