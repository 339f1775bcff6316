//! One watchdog renewal round: for one lock, or coalesced for many.
//!
//! **Coalesced.** Locks due at the same wake-up whose extend is `EXTEND` on one key (exclusive,
//! fenced, write: see `crate::kinds::exclusive`) share one [`Cmd::ExtendMany`] call per node: the node parses, dispatches
//! and answers once per batch instead of once per lock, and the client encodes, queues and wakes once.
//! Each lock still gets its own [`Tally`] from its own character of each node's answer, and is settled
//! exactly as if it had had its own round: same start (so the same validity), same deadline rules,
//! same "lost only when a majority refuses or validity ends".

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::entry::{next_renewal, Entry, EntryState};
use crate::algo::quorum::{Decision, Tally, Vote};
use crate::algo::timing::millis;
use crate::engine::core::Core;
use crate::engine::fanout::{fan_out_into, run, Count};
use crate::error::{LockError, NodeError};
use crate::lock::Lock;
use crate::observe::Op;
use crate::protocol::cmd::{Cmd, Extend, NodeResult, Reply};
use crate::protocol::scripts::{extend_many_vote, EXTEND_MANY};

/// Most locks one coalesced call carries: the node runs the script without interruption, so this
/// bounds how long one call holds up the node's other clients (a few tens of microseconds).
pub(crate) const BATCH_MAX: usize = 32;

/// What a renewal round returns per entry: when to look at it next (`None`: lost or released).
pub(crate) type Next = (Arc<Entry>, Option<Instant>);

/// Splits the entries due now into rounds: coalescable ones in batches of locks with similar
/// validity (so one lock near its end does not cut the others' wait short), the rest one by one.
pub(crate) fn rounds(engine: &Core, mut due: Vec<Arc<Entry>>) -> Vec<Vec<Arc<Entry>>> {
    let batches = engine.nodes().iter().all(|n| n.batches());
    let mut rounds = Vec::new();
    let mut many = Vec::new();
    for entry in due.drain(..) {
        let key = entry
            .lock()
            .lock
            .as_ref()
            .filter(|l| batches && l.kind().extends_first_key())
            .map(Lock::valid_until);
        match key {
            Some(until) => many.push((until, entry)),
            None => rounds.push(vec![entry]),
        }
    }
    many.sort_unstable_by_key(|(until, _)| *until);
    let mut entries = many.into_iter().map(|(_, e)| e).peekable();
    while entries.peek().is_some() {
        rounds.push(entries.by_ref().take(BATCH_MAX).collect());
    }
    rounds
}

/// Renews `entries` in one round (coalesced if more than one).
pub(crate) async fn renew(engine: Arc<Core>, entries: Vec<Arc<Entry>>) -> Vec<Next> {
    match <[_; 1]>::try_from(entries) {
        Ok([entry]) => {
            let next = renew_one(&engine, &entry).await;
            vec![(entry, next)]
        }
        Err(entries) => renew_many(&engine, entries).await,
    }
}

/// What a due entry needs from its round, read under its lock.
struct Due {
    ttl: Duration,
    valid_until: Instant,
}

/// Checks a due entry: `Err(next)` when it needs no round (lost: `None`; capped: look again at the
/// end of its validity, to declare it lost then).
fn check(entry: &Entry, st: &EntryState, lock: &Lock) -> Result<Due, Option<Instant>> {
    let renews = entry.renews(st);
    if Instant::now() >= lock.valid_until() {
        entry.declare_lost(st, "expired");
        return Err(None);
    }
    if !renews {
        return Err(Some(lock.valid_until()));
    }
    Ok(Due {
        ttl: lock.ttl(),
        valid_until: lock.valid_until(),
    })
}

async fn renew_one(engine: &Core, entry: &Entry) -> Option<Instant> {
    let (cmd, due, kind) = {
        let st = entry.lock();
        let lock = st.lock.as_ref()?;
        let due = match check(entry, &st, lock) {
            Ok(due) => due,
            Err(next) => return next,
        };
        (lock.extend_cmd(lock.ttl()), due, lock.kind())
    };
    let timeout = engine.round_timeout(due.ttl);
    // No point waiting for a turn that would start too late to finish before the validity ends.
    let admit_until = due
        .valid_until
        .checked_sub(timeout)
        .unwrap_or(due.valid_until);
    let Ok(_slot) = engine.admit(Some(admit_until)).await else {
        return Some(not_renewed(entry));
    };
    let jumps_at = engine.jumps_now();
    let start = Instant::now();
    let deadline = engine.round_deadline(start, due.ttl, Some(due.valid_until));
    let quorum = kind.tally(engine.nodes().len());
    let tally = fan_out_into(
        engine.nodes(),
        &cmd,
        deadline,
        Vote::of_script,
        quorum,
        false,
    )
    .await;
    settle(engine, entry, due.ttl, (start, jumps_at), timeout, tally)
}

async fn renew_many(engine: &Core, entries: Vec<Arc<Entry>>) -> Vec<Next> {
    let mut out = Vec::with_capacity(entries.len());
    let mut members = Vec::with_capacity(entries.len());
    let mut locks = Vec::with_capacity(entries.len());
    for entry in entries {
        let prepared = {
            let st = entry.lock();
            match st.lock.as_ref() {
                None => Err(None),
                Some(lock) => check(&entry, &st, lock).map(|due| {
                    let extend = Extend {
                        key: lock.keys().as_slice()[0].clone(),
                        value: lock.value(),
                        ttl_ms: millis(lock.ttl()),
                    };
                    (due, extend)
                }),
            }
        };
        match prepared {
            Ok((due, extend)) => {
                members.push((entry, due));
                locks.push(extend);
            }
            Err(next) => out.push((entry, next)),
        }
    }
    let (Some(ttl), Some(valid_until)) = (
        members.iter().map(|(_, d)| d.ttl).min(),
        members.iter().map(|(_, d)| d.valid_until).min(),
    ) else {
        return out;
    };
    // The shortest TTL and the earliest validity bound the shared round, so no member waits longer
    // than its own round would have.
    let timeout = engine.round_timeout(ttl);
    let admit_until = valid_until.checked_sub(timeout).unwrap_or(valid_until);
    let Ok(_slot) = engine.admit(Some(admit_until)).await else {
        out.extend(members.into_iter().map(|(e, _)| {
            let at = not_renewed(&e);
            (e, Some(at))
        }));
        return out;
    };
    let jumps_at = engine.jumps_now();
    let start = Instant::now();
    let deadline = engine.round_deadline(start, ttl, Some(valid_until));
    let mut count = PerLock::new(engine.nodes().len(), members.len());
    let cmd = Cmd::ExtendMany {
        script: &EXTEND_MANY,
        locks: locks.into(),
    };
    run(engine.nodes(), &cmd, deadline, true, &mut count).await;
    for ((entry, due), tally) in members.into_iter().zip(count.tallies) {
        let next = settle(engine, &entry, due.ttl, (start, jumps_at), timeout, tally);
        out.push((entry, next));
    }
    out
}

/// Applies a renewal round's tally to its entry; returns when to look at it next.
fn settle(
    engine: &Core,
    entry: &Entry,
    ttl: Duration,
    (start, jumps_at): (Instant, u64),
    timeout: Duration,
    tally: Tally,
) -> Option<Instant> {
    engine.metrics().round(Op::Renew, &tally, start.elapsed());
    let hopeless = cannot_win(&tally);
    let mut st = entry.lock();
    let lock = st.lock.as_mut()?;
    match lock.settle_extend(&engine.settings().timing, ttl, (start, jumps_at), tally) {
        Ok(()) => {
            let valid_until = lock.valid_until();
            st.renewals += 1;
            st.next_renewal = next_renewal(start, entry.every, valid_until, timeout);
            Some(st.next_renewal)
        }
        Err(err) if hopeless => {
            let cause = match err {
                LockError::NotOwner => "taken",
                LockError::AlreadyExpired => "gone",
                _ => "unreachable",
            };
            entry.declare_lost(&st, cause);
            None
        }
        Err(_) => {
            let at = retry_at(entry, lock.valid_until());
            st.next_renewal = at;
            Some(at)
        }
    }
}

/// Records that a renewal could not even start (no round slot in time) and returns the retry time.
fn not_renewed(entry: &Entry) -> Instant {
    let mut st = entry.lock();
    let valid_until = st
        .lock
        .as_ref()
        .map_or_else(Instant::now, Lock::valid_until);
    let at = retry_at(entry, valid_until);
    st.next_renewal = at;
    at
}

/// Whether the round's refusals alone rule out a majority: more nodes said "gone" or "someone
/// else's" than a quorum can spare. Failures (timeouts, errors) never count here: they may pass. A
/// node whose clock jumped forward counts as "gone": it may have expired the key early, and it will
/// not vote again for longer than the lock can stay valid, so a lock that needs it is lost now.
fn cannot_win(tally: &Tally) -> bool {
    let jumped = tally
        .failures
        .iter()
        .filter(|(_, e)| *e == crate::error::NodeError::ClockJump)
        .count();
    tally.gone + tally.taken + jumped > tally.nodes - tally.quorum()
}

/// When to try again after a renewal round that did not win: shortly (an eighth of the interval,
/// 1-100 ms), but never after the validity ends — then the lock is declared lost.
fn retry_at(entry: &Entry, valid_until: Instant) -> Instant {
    let pause = (entry.every / 8).clamp(Duration::from_millis(1), Duration::from_millis(100));
    (Instant::now() + pause).min(valid_until)
}

/// A coalesced round's count: one tally per lock, fed from its character of each node's answer.
struct PerLock {
    tallies: Vec<Tally>,
    /// Tallies not decided yet; the round is decided when none is left.
    open: usize,
}

impl PerLock {
    fn new(nodes: usize, locks: usize) -> Self {
        Self {
            tallies: vec![Tally::new(nodes); locks],
            open: locks,
        }
    }

    /// Records `vote(i)` for every lock `i` (tallies stay decided once decided: votes only add).
    fn record_each(&mut self, index: usize, mut vote: impl FnMut(usize) -> Vote) -> Decision {
        for (i, tally) in self.tallies.iter_mut().enumerate() {
            let was_open = tally.decision() == Decision::Open;
            if tally.record(index, vote(i)) != Decision::Open && was_open {
                self.open -= 1;
            }
        }
        if self.open == 0 {
            Decision::Won
        } else {
            Decision::Open
        }
    }
}

impl Count for PerLock {
    fn reply(&mut self, index: usize, reply: NodeResult) -> Decision {
        let locks = self.tallies.len();
        match reply {
            Ok(Reply::Data(codes)) if codes.len() == locks => {
                self.record_each(index, |i| extend_many_vote(codes[i]))
            }
            Ok(other) => {
                let error = other.unexpected("coalesced extend script");
                self.fail(index, error)
            }
            Err(error) => self.fail(index, error),
        }
    }

    fn fail(&mut self, index: usize, error: NodeError) -> Decision {
        self.record_each(index, |_| Vote::Failed(error.clone()))
    }
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
        t.failures = vec![(0, NodeError::Timeout), (1, NodeError::Timeout)];
        assert!(!cannot_win(&t), "timeouts are not refusals");
    }

    #[test]
    fn each_lock_of_a_batch_gets_its_own_votes() {
        let mut count = PerLock::new(3, 3);
        let codes = |s: &'static [u8]| Ok(Reply::Data(bytes::Bytes::from_static(s)));
        assert_eq!(count.reply(0, codes(b"10-")), Decision::Open);
        // A short answer is that node's failure for every lock, never a vote.
        assert_eq!(count.reply(1, codes(b"1")), Decision::Open);
        assert_eq!(count.reply(2, codes(b"1--")), Decision::Won);
        let [a, b, c] = <[Tally; 3]>::try_from(count.tallies).unwrap();
        assert!(a.won() && a.yes_mask == 0b101);
        assert_eq!((b.yes, b.gone, b.taken, b.failures.len()), (0, 1, 1, 1));
        assert_eq!((c.taken, c.failures.len()), (2, 1));
        assert!(!b.won() && cannot_win(&c));
    }
}
