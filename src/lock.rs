//! [`Lock`]: what a successful acquire returns, and the invariants it keeps.
//!
//! Its fields are private: everything that changes a lock goes through a method here, so the rules
//! are written once — "when `valid_until` changes, tell the local queue" (waiters stop queueing behind
//! a lock that has expired), and how an extend round's outcome changes the lock.

use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use crate::algo::clock::JumpMark;
use crate::algo::keys::KeyFormat;
use crate::algo::quorum::Tally;
use crate::algo::timing::{millis, Timing};
use crate::algo::value::LockValue;
use crate::algo::verdict::owner_error;
use crate::engine::waitq::LocalHold;
use crate::error::LockError;
use crate::observe::Held;
use crate::protocol::cmd::{Cmd, Keys};
use crate::protocol::spec::{Kind, Target};

/// A lock held on a majority of the nodes until [`valid_until`](Lock::valid_until).
///
/// # Dropping a lock
/// Dropping a plain `Lock` does **not** release it: its keys stay on the nodes until the TTL ends,
/// and other clients wait until then. Call [`crate::Redlock::release`] when done, or take the lock
/// as a [`crate::LockGuard`] ([`crate::Redlock::lock`]), which releases on drop.
///
/// The lock's value (its ownership secret) is private and never printed by `Debug`.
#[must_use = "a dropped Lock stays held until its TTL: release it, or take a LockGuard"]
pub struct Lock {
    /// The resource's key (first; see `keys`), then the kind's other keys.
    keys: Keys,
    kind: Kind,
    prefix_len: usize,
    key_format: KeyFormat,
    value: LockValue,
    ttl: Duration,
    valid_until: Instant,
    /// This task's turn at the head of the resource's local queue, while it holds the lock.
    local: Option<LocalHold<Lock>>,
    /// Local hand-offs in a row this lock has had (bounded, so other processes get their turn).
    handoffs: u32,
    /// The highest fence counter the acquire round saw (fenced locks), the floor of the token proposal.
    fence_floor: u64,
    /// The committed fencing token (fenced locks).
    fence: Option<u64>,
    /// The nodes that confirmed the last acquire or extend (bit = node index): only their answers can
    /// tell "someone else's now" or "expired" apart from "never had it".
    held: u16,
    /// Attempts the acquire that returned this lock made (0 for a local hand-off).
    attempts: u32,
    /// The nodes' clock jumps since the last won round started: a node in `held` that jumped has
    /// dropped its key.
    jumps: JumpMark,
    /// The waiter elsewhere a take-over's grant named (its wake name; 0: none known), whom the
    /// release hands the lock to (`crate::protocol::handoff`).
    next_waiter: u64,
    /// Counted in its engine's `redlock_locks_held` while it lives.
    _held: Held,
    /// A check of the nodes found it no longer held (`crate::engine::holds`).
    gone: std::sync::atomic::AtomicBool,
}

/// What a won acquire round establishes about a new lock.
#[derive(Debug)]
pub(crate) struct Grant {
    /// Counts the lock in its engine's `redlock_locks_held` while it lives.
    pub(crate) held: Held,
    pub(crate) prefix_len: usize,
    pub(crate) key_format: KeyFormat,
    pub(crate) value: LockValue,
    pub(crate) ttl: Duration,
    pub(crate) valid_until: Instant,
    pub(crate) tally: Tally,
    /// Taken when the round started.
    pub(crate) jumps: JumpMark,
}

impl Lock {
    /// The lock a won acquire round of `target` grants.
    pub(crate) fn granted(target: &Target, grant: Grant) -> Self {
        Self {
            keys: target.keys.clone(),
            kind: target.kind,
            prefix_len: grant.prefix_len,
            key_format: grant.key_format,
            value: grant.value,
            ttl: grant.ttl,
            valid_until: grant.valid_until,
            local: None,
            handoffs: 0,
            fence_floor: grant.tally.max_counter,
            fence: None,
            held: grant.tally.yes_mask,
            attempts: 1,
            jumps: grant.jumps,
            next_waiter: 0,
            _held: grant.held,
            gone: Default::default(),
        }
    }

    /// Records that the nodes no longer hold it: from now on it is not valid.
    pub(crate) fn mark_gone(&self) {
        self.gone.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether a check of the nodes found it no longer held.
    pub(crate) fn is_gone(&self) -> bool {
        self.gone.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The command that asks a node whether it is still ours.
    pub(crate) fn holds_cmd(&self) -> Cmd {
        self.kind.holds_cmd(&self.keys, self.value)
    }

    /// Records the waiter elsewhere this lock's grant named (0: none).
    pub(crate) fn waited_on_by(mut self, next_waiter: u64) -> Self {
        self.next_waiter = next_waiter;
        self
    }

    /// The waiter elsewhere the release hands off to (0: none known).
    pub(crate) fn next_waiter(&self) -> u64 {
        self.next_waiter
    }

    /// Attaches this task's place in the local queue and tells waiters how long the lock is valid.
    pub(crate) fn with_local(mut self, local: Option<LocalHold<Lock>>) -> Self {
        self.local = local;
        self.set_valid_until(self.valid_until);
        self
    }

    /// Takes this task's place in the local queue out of the lock (release, hand-off).
    pub(crate) fn take_local(&mut self) -> Option<LocalHold<Lock>> {
        self.local.take()
    }

    /// The one way `valid_until` changes: the local queue is told too.
    fn set_valid_until(&mut self, until: Instant) {
        self.valid_until = until;
        if let Some(local) = &self.local {
            local.set_valid_until(until);
        }
    }

    /// Applies an extend round's outcome (one started at `start`, extending to `ttl`, when the jump
    /// log stood at `jumps_at`: [`jumps_now`](Self::jumps_now) before the round).
    ///
    /// On success `valid_until` becomes `start + ttl - drift`. On failure it can only move earlier: a
    /// partial extend with a shorter TTL may have shortened some keys.
    pub(crate) fn settle_extend(
        &mut self,
        timing: &Timing,
        ttl: Duration,
        (start, jumps_at): (Instant, u64),
        tally: Tally,
    ) -> Result<(), LockError> {
        let extended_until = start + ttl.saturating_sub(timing.drift(ttl));
        match timing.validity(ttl, start.elapsed()) {
            Some(_) if tally.won() => {
                self.set_valid_until(extended_until);
                self.ttl = ttl;
                self.held = tally.yes_mask;
                self.jumps.move_to(jumps_at);
                Ok(())
            }
            _ => {
                self.set_valid_until(self.valid_until.min(extended_until));
                if tally.won() {
                    Err(LockError::ValidityExpired {
                        left: Duration::ZERO,
                        min: timing.min_validity(ttl),
                    })
                } else {
                    Err(owner_error(tally, self.held))
                }
            }
        }
    }

    /// Counts a local hand-off: the lock now belongs to the next local holder, no round trip made.
    pub(crate) fn handed_over(&mut self) {
        self.handoffs += 1;
        self.attempts = 0;
    }

    /// Records how many attempts the acquire that returned this lock made.
    pub(crate) fn set_attempts(&mut self, attempts: u32) {
        self.attempts = attempts;
    }

    /// Records the fencing token a commit round won.
    pub(crate) fn set_fence(&mut self, token: u64) {
        self.fence = Some(token);
    }

    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    pub(crate) fn keys(&self) -> &Keys {
        &self.keys
    }

    pub(crate) fn value(&self) -> LockValue {
        self.value
    }

    pub(crate) fn handoffs(&self) -> u32 {
        self.handoffs
    }

    pub(crate) fn fence_floor(&self) -> u64 {
        self.fence_floor
    }

    pub(crate) fn held(&self) -> u16 {
        self.held
    }

    /// Where the clock-jump log stands now: read just before an extend round starts.
    pub(crate) fn jumps_now(&self) -> u64 {
        self.jumps.now()
    }

    /// Whether this lock is one of `target`: same kind, same keys.
    pub(crate) fn is_for(&self, target: &Target) -> bool {
        self.kind.same_as(target.kind) && self.keys.as_slice() == target.keys.as_slice()
    }

    /// Its release command; `notify` also publishes the release for waiters in other processes.
    pub(crate) fn release_cmd(&self, notify: bool) -> Cmd {
        self.kind.release_cmd(&self.keys, self.value, notify)
    }

    /// Its extend command, to `ttl` from when the node runs it.
    pub(crate) fn extend_cmd(&self, ttl: Duration) -> Cmd {
        self.kind.extend_cmd(&self.keys, self.value, millis(ttl))
    }

    /// The resource name this lock was acquired for (without the key prefix); the first one of a
    /// multi-resource lock.
    pub fn resource(&self) -> &[u8] {
        crate::algo::keys::resource_of(self.key_format, &self.keys.as_slice()[0], self.prefix_len)
    }

    /// Every resource this lock holds: one, or several for a multi-resource lock.
    pub fn resources(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let count = if self.kind.multi_resource() {
            self.keys.as_slice().len()
        } else {
            1
        };
        self.keys.as_slice()[..count]
            .iter()
            .map(move |key| crate::algo::keys::resource_of(self.key_format, key, self.prefix_len))
    }

    /// The fencing token of a lock from [`crate::Redlock::acquire_fenced`]: larger than the token of
    /// every earlier holder of the resource (see `kinds::fenced` for the argument and its
    /// assumptions). Pass it to the storage you protect, which must reject writes with a smaller one:
    /// [`crate::FencedStore`] for a Redis store; for SQL, a write that carries it in its condition
    /// (`... WHERE id = ? AND fence <= ?`, see the guide). Below 2^53 (exact as a JSON or
    /// JavaScript number) unless an earlier version raised the resource's counters past it.
    pub fn fencing_token(&self) -> Option<u64> {
        self.fence
    }

    /// Whether this is a shared (reader) hold of a read-write lock.
    pub fn is_read(&self) -> bool {
        self.kind.shared()
    }

    /// The monotonic instant until which the lock is safe to rely on: `start + TTL - drift`, measured
    /// from the start of the acquire (or of the last successful extend). Past it, another client may hold
    /// the resource.
    pub fn valid_until(&self) -> Instant {
        self.valid_until
    }

    /// Validity left now; zero once expired, once the lock lost its majority to node clock jumps, or
    /// once its engine was shut down (see [`is_valid`](Self::is_valid)).
    pub fn remaining(&self) -> Duration {
        if !self.still_held() {
            return Duration::ZERO;
        }
        self.valid_until.saturating_duration_since(Instant::now())
    }

    /// Whether the validity has not ended yet. Check it (or [`remaining`](Self::remaining)) before each
    /// step of work the lock protects: a process can pause for longer than the TTL at any point.
    ///
    /// With the clock guard on, it also turns false when nodes that granted the lock have had their
    /// wall clock jump forward (which expires their keys at once) and the rest are no longer a
    /// majority. This engine sees a node's clock when it sends it an acquire, and at least every
    /// 80 ms otherwise, so that (plus a round trip) is how late it can learn. It is false too from the
    /// moment its engine's [`shutdown`](crate::Redlock::shutdown) begins, which releases it, and
    /// once a check of the nodes ([`crate::LockGuard::is_held`]) found it no longer held.
    pub fn is_valid(&self) -> bool {
        Instant::now() < self.valid_until && self.still_held()
    }

    /// Everything [`is_valid`](Self::is_valid) checks but the clock: no clock jump took its quorum,
    /// no shutdown, no check found it gone.
    fn still_held(&self) -> bool {
        self.jumps.still_held(self.held, |n| self.kind.quorum(n))
            && !self._held.closed()
            && !self.is_gone()
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
