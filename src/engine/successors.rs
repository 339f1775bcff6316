//! A release that grants the next holder in its own round, for a kind that has one
//! ([`Successor`]: the fair lock). A waiter of this engine parks here between its rounds; a release
//! of the same key by this engine names the lowest-ranked parked waiter, and each node gives that
//! waiter the key in the release's script when it is the head of the node's queue there. Granted on
//! a majority, the waiter has the lock without a round of its own; granted on fewer (or maybe: a
//! node failed to answer), it attempts at once; granted nowhere, it goes on waiting. A node whose
//! answer came after the round was decided may have granted it all the same: its next round (at
//! most a keepalive pause later) finds its key there and, not being the head, deletes it. The nodes
//! decide who is next, with the kind's own rule, so the order the kind promises is
//! kept: a remote waiter ahead of ours is not passed over (it is woken, as by any release).
//!
//! # Why the handed lock is held
//! - *Quorum*: it is handed only when a majority answered that its script set the key to the
//!   waiter's value (the reply carries the SHA1 of the value it set, checked against ours).
//! - *Validity*: it counts from the release round's start, taken before any node could run the
//!   script, on this process's monotonic clock — the waiter's own clock, as it is in this process.
//!   Each node's key lives a TTL from when its script ran, after that start.
//! - *No race with the waiter's own round*: a waiter is claimed only while parked (between rounds),
//!   and does not start a round until the release's claim is answered ([`Registration::resume`]).
//!   Otherwise a round of its own could lose and unlock the keys the release had just set.
//! - *Nobody left holding*: a waiter that is gone when the answer comes (its acquire dropped) has the
//!   lock released in the background; its own give-up also reaches every node after the release.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::core::Core;
use super::fanout::{run, Count, Deadline};
use super::parked::{locked, Handed, Parked, State, Successors};
use crate::algo::clock::JumpMark;
use crate::algo::quorum::{Decision, Tally, Vote};
use crate::algo::timing::millis;
use crate::algo::value::LockValue;
use crate::error::NodeError;
use crate::lock::Lock;
use crate::protocol::cmd::NodeResult;
use crate::protocol::spec::{Successor, Target};

impl Core {
    /// Parks a waiter of `target` with `rank` between its rounds, until the registration drops.
    pub(crate) fn park(
        &self,
        target: &Target,
        value: LockValue,
        rank: u64,
        ttl: Duration,
    ) -> Registration<'_> {
        let parked = Arc::new(Parked {
            target: target.clone(),
            value,
            rank,
            ttl,
            state: Mutex::new(State::Busy),
            notify: Notify::new(),
        });
        let key = target.keys.as_slice()[0].clone();
        let mut map = locked(&self.successors().0);
        let list = map.entry(key).or_default();
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(&parked));
        Registration { core: self, parked }
    }

    /// The lowest-ranked waiter of this engine on `lock`'s key, claimed for the release, if it is
    /// parked (if it is in a round, the ones behind it are not the head anywhere it is).
    pub(crate) fn claim_successor(&self, lock: &Lock) -> Option<Claim<'_>> {
        let key = &lock.keys().as_slice()[0];
        let first = {
            let mut map = locked(&self.successors().0);
            let list = map.get_mut(key)?;
            list.retain(|w| w.strong_count() > 0);
            if list.is_empty() {
                map.remove(key);
                return None;
            }
            // The holder is not among them: its acquire ended, and its registration with it.
            list.iter()
                .filter_map(Weak::upgrade)
                .min_by(|a, b| (a.rank, a.value.as_bytes()).cmp(&(b.rank, b.value.as_bytes())))?
        };
        let mut state = locked(&first.state);
        if !matches!(*state, State::Parked) {
            return None;
        }
        *state = State::Claimed;
        drop(state);
        Some(Claim {
            core: self,
            parked: first,
            answered: false,
        })
    }

    /// Releases `lock` with `successor`'s command, which may grant `claim`'s waiter on the nodes;
    /// answers the claim and returns the release's tally.
    pub(crate) async fn release_to_successor(
        &self,
        lock: &Lock,
        successor: &'static Successor,
        claim: Claim<'_>,
        deadline: Deadline,
    ) -> Tally {
        let next = &claim.parked;
        let cmd = (successor.release_to)(
            lock.keys(),
            lock.value(),
            millis(next.ttl),
            next.rank,
            next.value,
        );
        let n = self.nodes().len();
        let mut count = Replies {
            release: Tally::for_release(n),
            granted: Tally::new(n),
            read: successor.vote,
            next: next.value,
            core: self,
            jumps: self.jump_mark(),
            start: Instant::now(),
            claim: Some(claim),
        };
        run(self.nodes(), &cmd, deadline, true, &mut count).await;
        // Undecided by the deadline: answered with what came.
        count.answer();
        count.release
    }

    fn successors(&self) -> &Successors {
        &self.successors
    }
}

/// A release's count: its own tally (the holder's key) and the named waiter's grants, whose claim
/// is answered as soon as they are decided (the release's own verdict may take longer).
struct Replies<'a> {
    release: Tally,
    granted: Tally,
    read: fn(NodeResult, LockValue) -> (Vote, bool),
    next: LockValue,
    core: &'a Core,
    jumps: JumpMark,
    start: Instant,
    claim: Option<Claim<'a>>,
}

impl Replies<'_> {
    fn decision(&mut self) -> Decision {
        if self.granted.decision() != Decision::Open {
            self.answer();
        }
        match (self.release.decision(), self.granted.decision()) {
            (Decision::Open, _) | (_, Decision::Open) => Decision::Open,
            (release, _) => release,
        }
    }

    /// Answers the claim (once): the lock if a majority granted it with enough validity left,
    /// counted from the round's start.
    fn answer(&mut self) {
        let Some(claim) = self.claim.take() else {
            return;
        };
        let next = &claim.parked;
        let round = (self.start, self.start.elapsed());
        let granted = self.granted.won().then(|| {
            let (tally, jumps) = (self.granted.clone(), self.jumps.clone());
            let lock = self
                .core
                .won_lock(&next.target, next.value, next.ttl, round, tally, jumps);
            lock.ok()
        });
        let handed = match granted.flatten() {
            Some(lock) => Handed::Lock(Box::new(lock)),
            // Won with too little validity left: the waiter's own round refreshes the keys.
            None if self.granted.won() => Handed::TryNow,
            None if self.granted.yes == 0 && self.granted.failures.is_empty() => Handed::Stay,
            None => Handed::TryNow,
        };
        claim.answer(handed);
    }
}

impl Count for Replies<'_> {
    fn reply(&mut self, index: usize, reply: NodeResult) -> Decision {
        let (vote, granted) = (self.read)(reply, self.next);
        let grant_vote = match (&vote, granted) {
            (_, true) => Vote::Yes,
            (Vote::Failed(e), false) => Vote::Failed(e.clone()),
            (_, false) => Vote::Taken,
        };
        self.granted.record(index, grant_vote);
        self.release.record(index, vote);
        self.decision()
    }

    fn fail(&mut self, index: usize, error: NodeError) -> Decision {
        self.granted.record(index, Vote::Failed(error.clone()));
        self.release.record(index, Vote::Failed(error));
        self.decision()
    }
}

/// A parked waiter's side: its place in the registry while it waits.
pub(crate) struct Registration<'a> {
    core: &'a Core,
    parked: Arc<Parked>,
}

impl Registration<'_> {
    /// Between rounds from now: a release may name it.
    pub(crate) fn rest(&self) {
        let mut state = locked(&self.parked.state);
        if matches!(*state, State::Busy) {
            *state = State::Parked;
        }
    }

    /// Resolves when a release answered a claim on this waiter (or spuriously: then
    /// [`resume`](Self::resume) finds nothing).
    pub(crate) async fn answered(&self) {
        self.parked.notify.notified().await
    }

    /// Before a round of its own: waits out a release that named it and returns its answer
    /// (`None`: nobody did, go on with the round).
    pub(crate) async fn resume(&self) -> Option<Handed> {
        loop {
            let notified = self.parked.notify.notified();
            {
                let mut state = locked(&self.parked.state);
                match std::mem::replace(&mut *state, State::Busy) {
                    State::Answered(handed) => return Some(handed),
                    State::Claimed => *state = State::Claimed,
                    State::Gone => {
                        *state = State::Gone;
                        return None;
                    }
                    State::Busy | State::Parked => return None,
                }
            }
            notified.await;
        }
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let before = std::mem::replace(&mut *locked(&self.parked.state), State::Gone);
        if let State::Answered(Handed::Lock(lock)) = before {
            self.core.release_in_background(&lock);
        }
        let key = &self.parked.target.keys.as_slice()[0];
        let mut map = locked(&self.core.successors().0);
        if let Some(list) = map.get_mut(key) {
            let me = Arc::as_ptr(&self.parked);
            list.retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), me));
            if list.is_empty() {
                map.remove(key);
            }
        }
    }
}

/// A release's claim on a parked waiter: answered once, with [`Handed::TryNow`] if the release is
/// dropped before its replies are in.
pub(crate) struct Claim<'a> {
    core: &'a Core,
    parked: Arc<Parked>,
    answered: bool,
}

impl Claim<'_> {
    fn answer(mut self, handed: Handed) {
        self.give(handed);
    }

    fn give(&mut self, handed: Handed) {
        self.answered = true;
        let mut state = locked(&self.parked.state);
        match *state {
            State::Claimed => {
                *state = State::Answered(handed);
                drop(state);
                self.parked.notify.notify_one();
            }
            // Gone meanwhile: nobody takes the lock, so it is released.
            _ => {
                drop(state);
                if let Handed::Lock(lock) = handed {
                    self.core.release_in_background(&lock);
                }
            }
        }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.give(Handed::TryNow);
        }
    }
}
