//! [`Lock`]: what a successful acquire returns.

use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use crate::kind::Kind;
use crate::transport::Keys;
use crate::value::LockValue;
use crate::waitq::LocalHold;

/// A lock held on a majority of the nodes until [`valid_until`](Lock::valid_until).
///
/// # Dropping a lock
/// `Drop` cannot await, so dropping a `Lock` does **not** release it: its keys stay on the nodes until
/// the TTL ends, and other clients wait until then. Call [`crate::Redlock::release`] when done.
///
/// The lock's value (its ownership secret) is private and never printed by `Debug`.
pub struct Lock {
    /// The resource's key (first; see `keys`), then the kind's other keys.
    pub(crate) keys: Keys,
    pub(crate) kind: Kind,
    pub(crate) prefix_len: usize,
    pub(crate) value: LockValue,
    pub(crate) ttl: Duration,
    pub(crate) valid_until: Instant,
    /// This task's turn at the head of the resource's local queue, while it holds the lock.
    pub(crate) local: Option<LocalHold>,
    /// Local hand-offs in a row this lock has had (bounded, so other processes get their turn).
    pub(crate) handoffs: u32,
    /// The highest fence counter the acquire round saw (fenced locks), the floor of the token proposal.
    pub(crate) fence_floor: u64,
    /// The committed fencing token (fenced locks).
    pub(crate) fence: Option<u64>,
    /// The nodes that confirmed the last acquire or extend (bit = node index): only their answers can
    /// tell "someone else's now" or "expired" apart from "never had it".
    pub(crate) held: u16,
    /// Attempts the acquire that returned this lock made (0 for a local hand-off).
    pub(crate) attempts: u32,
}

impl Lock {
    /// Attaches this task's place in the local queue and tells waiters how long the lock is valid.
    pub(crate) fn with_local(mut self, local: Option<LocalHold>) -> Self {
        if let Some(hold) = &local {
            hold.set_valid_until(self.valid_until);
        }
        self.local = local;
        self
    }

    /// The resource name this lock was acquired for (without the key prefix); the first one of a
    /// multi-resource lock.
    pub fn resource(&self) -> &[u8] {
        crate::keys::resource_of(&self.keys.as_slice()[0], self.prefix_len)
    }

    /// Every resource this lock holds: one, or several for a multi-resource lock.
    pub fn resources(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let count = if self.kind == Kind::Multi {
            self.keys.as_slice().len()
        } else {
            1
        };
        self.keys.as_slice()[..count]
            .iter()
            .map(move |key| crate::keys::resource_of(key, self.prefix_len))
    }

    /// The fencing token of a lock from [`crate::Redlock::acquire_fenced`]: larger than the token of
    /// every earlier holder of the resource (see the `fence` module for the argument and its
    /// assumptions). Pass it to the storage you protect, which must reject writes with a smaller one.
    pub fn fencing_token(&self) -> Option<u64> {
        self.fence
    }

    /// Whether this is a shared (reader) hold of a read-write lock.
    pub fn is_read(&self) -> bool {
        matches!(self.kind, Kind::Read { .. })
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

    /// How many attempts on the nodes the acquire that returned this lock made: 1 when the first won,
    /// 0 when it was handed over by another task of this process without a round trip.
    pub fn attempts(&self) -> u32 {
        self.attempts
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
            .field("kind", &self.kind)
            .field("ttl", &self.ttl)
            .field("remaining", &self.remaining())
            .finish_non_exhaustive()
    }
}
