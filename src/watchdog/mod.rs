//! The watchdog: one task per engine that renews every renewed lock when it is due.
//!
//! - **A timer heap, not a scan.** Each lock has one record in a min-heap by its next event (renewal,
//!   or the end of its validity); the task sleeps until the earliest and pops what is due. With
//!   100,000 locks renewing at different instants a scan of all of them per wake-up would cost
//!   O(n) per renewal; the heap costs O(log n). A released lock's record is dropped when it comes up.
//! - **Coalesced.** Every renewal due at one wake-up starts in the same poll, and locks of the common
//!   kinds share one extend call per node per batch (see `round`); admission control
//!   (see `crate::engine::admission`) spreads rounds beyond what the engine may have in flight.
//! - **Rounds run beside the timer.** Renewals in flight are polled together with the heap's timer,
//!   so a slow batch does not hold back locks that fall due meanwhile.
//! - **A failed round is not a lost lock.** Timeouts, disconnects or overload mean "not renewed this
//!   time": the renewal is retried shortly, while validity remains. The lock is lost only when its
//!   validity ends unrenewed, or when a round shows that a majority can no longer be won (enough nodes
//!   say the key is gone or holds someone else's value).

//!
//! Files: this one (the schedule, held by the engine's core), `task` (the loop that works through it),
//! `entry` (one renewed lock's record), `round` (one renewal round, coalesced or not).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use tokio::sync::Notify;
use tokio::time::Instant;

pub(crate) mod entry;
pub(crate) mod round;
pub(crate) mod task;

use entry::Entry;

/// The engine's schedule of renewed locks; whether its (lazily started) task runs.
#[derive(Debug, Default)]
pub(crate) struct Watchdog {
    registry: Mutex<Registry>,
    /// Shared with the task, which must wait on it without holding the engine.
    wake: Arc<Notify>,
}

#[derive(Debug, Default)]
struct Registry {
    heap: BinaryHeap<Reverse<Due>>,
    /// Tie-breaker for equal instants (so the heap never compares entries).
    seq: u64,
    /// Whether the task runs; changed only under this lock, so a registration never misses it.
    running: bool,
}

/// One scheduled look at an entry.
#[derive(Debug)]
struct Due {
    at: Instant,
    seq: u64,
    entry: Weak<Entry>,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

impl Registry {
    fn push(&mut self, at: Instant, entry: Weak<Entry>) {
        self.seq += 1;
        let seq = self.seq;
        self.heap.push(Reverse(Due { at, seq, entry }));
    }
}

impl Watchdog {
    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The task's wake-up signal (a new entry due before everything scheduled).
    pub(crate) fn wake_handle(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    /// Schedules an entry's first look at `at`; returns whether the task must be started.
    pub(crate) fn register(&self, entry: Weak<Entry>, at: Instant) -> bool {
        let mut registry = self.registry();
        let earliest = registry.heap.peek().is_none_or(|Reverse(d)| at < d.at);
        registry.push(at, entry);
        let start = !registry.running;
        registry.running = true;
        drop(registry);
        if earliest {
            self.wake.notify_one();
        }
        start
    }
}
