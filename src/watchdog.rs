//! The watchdog: one task per engine that renews every renewed lock when it is due.
//!
//! - **A timer heap, not a scan.** Each lock has one record in a min-heap by its next event (renewal,
//!   or the end of its validity); the task sleeps until the earliest and pops what is due. With
//!   100,000 locks renewing at different instants a scan of all of them per wake-up would cost
//!   O(n) per renewal; the heap costs O(log n). A released lock's record is dropped when it comes up.
//! - **Batched.** Every renewal due at one wake-up starts its round in the same poll, so each node's
//!   connection writes them in one go; admission control (see `crate::admission`) splits a batch
//!   larger than the engine may have in flight, first come first served.
//! - **Rounds run beside the timer.** Renewals in flight are polled together with the heap's timer,
//!   so a slow batch does not hold back locks that fall due meanwhile.
//! - **A failed round is not a lost lock.** Timeouts, disconnects or overload mean "not renewed this
//!   time": the renewal is retried shortly, while validity remains. The lock is lost only when its
//!   validity ends unrenewed, or when a round shows that a majority can no longer be won (enough nodes
//!   say the key is gone or holds someone else's value).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::fanout::fan_out;
use crate::observe::Op;
use crate::quorum::{quorum, Tally, Vote};
use crate::redlock::millis;
use crate::renew::{next_renewal, Entry};
use crate::transport::{Args, Cmd};
use crate::Redlock;

/// The engine's schedule of renewed locks and its (lazily started) task.
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

/// The watchdog loop. Holds the engine weakly while it sleeps, so it never keeps it alive; ends when
/// nothing is scheduled or in flight (the next `renew` starts it again).
pub(crate) async fn run(weak: Weak<crate::redlock::Inner>, wake: Arc<Notify>) {
    let mut in_flight = FuturesUnordered::new();
    loop {
        let next = {
            let Some(engine) = Redlock::upgrade(&weak) else {
                return;
            };
            let dog = engine.watchdog();
            let now = Instant::now();
            let mut registry = dog.registry();
            while registry.heap.peek().is_some_and(|Reverse(d)| d.at <= now) {
                let Some(Reverse(due)) = registry.heap.pop() else {
                    break;
                };
                let Some(entry) = due.entry.upgrade() else {
                    continue;
                };
                match entry.next_event() {
                    None => {} // released or lost: forget it
                    Some(at) if at > now => registry.push(at, due.entry),
                    Some(_) => in_flight.push(tick(engine.clone(), entry)),
                }
            }
            if registry.heap.is_empty() && in_flight.is_empty() {
                registry.running = false;
                return;
            }
            registry.heap.peek().map(|Reverse(d)| d.at)
        };
        tokio::select! {
            _ = sleep_until_opt(next) => {}
            _ = wake.notified() => {}
            Some((entry, at)) = in_flight.next(), if !in_flight.is_empty() => {
                if let (Some(at), Some(engine)) = (at, Redlock::upgrade(&weak)) {
                    engine.watchdog().registry().push(at, Arc::downgrade(&entry));
                }
            }
        }
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Renews one due entry; returns when to look at it next (`None`: lost or released, forget it).
async fn tick(engine: Redlock, entry: Arc<Entry>) -> (Arc<Entry>, Option<Instant>) {
    let next = renew_once(&engine, &entry).await;
    (entry, next)
}

async fn renew_once(engine: &Redlock, entry: &Entry) -> Option<Instant> {
    let (cmd, ttl, valid_until) = {
        let st = entry.lock();
        let lock = st.lock.as_ref()?;
        if Instant::now() >= lock.valid_until {
            drop(st);
            entry.lost.cancel();
            return None;
        }
        if !entry.renews(&st) {
            // Capped: look again when the validity ends, to declare it lost then.
            return Some(lock.valid_until);
        }
        let cmd = Cmd::Script {
            script: lock.kind.extend_script(),
            keys: lock.keys.clone(),
            value: lock.value,
            args: Args::of(&[millis(lock.ttl)]),
        };
        (cmd, lock.ttl, lock.valid_until)
    };
    let timeout = engine.round_timeout(ttl);
    // No point waiting for a turn that would start too late to finish before the validity ends.
    let admit_until = valid_until.checked_sub(timeout).unwrap_or(valid_until);
    let Ok(_slot) = engine.admit(Some(admit_until)).await else {
        let at = retry_at(entry, valid_until);
        entry.lock().next_renewal = at;
        return Some(at);
    };
    let start = Instant::now();
    let deadline = engine.round_deadline(start, ttl, Some(valid_until));
    let tally = fan_out(engine.nodes(), &cmd, deadline, Vote::of_script).await;
    engine.metrics().round(Op::Renew, &tally, start.elapsed());
    let hopeless = cannot_win(&tally);
    let mut st = entry.lock();
    let lock = st.lock.as_mut()?;
    match engine.settle_extend(lock, ttl, start, tally) {
        Ok(()) => {
            let valid_until = lock.valid_until;
            st.renewals += 1;
            st.next_renewal = next_renewal(start, entry.every, valid_until, timeout);
            Some(st.next_renewal)
        }
        Err(_) if hopeless => {
            drop(st);
            entry.lost.cancel();
            None
        }
        Err(_) => {
            let valid_until = lock.valid_until;
            let at = retry_at(entry, valid_until);
            st.next_renewal = at;
            Some(at)
        }
    }
}

/// Whether the round's refusals alone rule out a majority: more nodes said "gone" or "someone
/// else's" than a quorum can spare. Failures (timeouts, errors) never count here: they may pass.
fn cannot_win(tally: &Tally) -> bool {
    tally.gone + tally.taken > tally.nodes - quorum(tally.nodes)
}

/// When to try again after a renewal round that did not win: shortly (an eighth of the interval,
/// 1-100 ms), but never after the validity ends — then the lock is declared lost.
fn retry_at(entry: &Entry, valid_until: Instant) -> Instant {
    let pause = (entry.every / 8).clamp(Duration::from_millis(1), Duration::from_millis(100));
    (Instant::now() + pause).min(valid_until)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_alone_decide_a_lost_renewal() {
        let mut t = Tally::new(5);
        t.gone = 2;
        assert!(!cannot_win(&t), "3 of 5 may still say yes");
        t.taken = 1;
        assert!(cannot_win(&t), "2 gone + 1 taken: at most 2 yes");
        let mut t = Tally::new(3);
        t.failures = vec![
            (0, crate::NodeError::Timeout),
            (1, crate::NodeError::Timeout),
        ];
        assert!(!cannot_win(&t), "timeouts are not refusals");
    }
}
