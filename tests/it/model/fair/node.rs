//! The fair model's nodes: a lock key and a queue of `(ticket, waiter)` entries that expire, and one
//! message handled atomically, as the scripts do.

use std::collections::BTreeMap;

pub const TTL: u64 = 100;
pub const TIMEOUT: u64 = 10;
pub const DRIFT: u64 = 2;
/// Faults (loss, long delays, pauses, deaths) and new acquires stop here; the rest drains.
pub const FAULTS_END: u64 = 60 * TTL;
pub const END: u64 = FAULTS_END + 40 * TTL;

#[derive(Default)]
pub struct Node {
    pub lock: Option<(u64, u64)>,
    /// waiter -> (ticket, expires_at): its entry, live until its live key expires
    pub queue: BTreeMap<u64, (u64, u64)>,
    /// waiter -> the epoch its live key holds (set with the entry, moved by its rounds and unlocks)
    pub epochs: BTreeMap<u64, u64>,
}

impl Node {
    /// The lock key's own expiry, as the server's.
    pub fn expire(&mut self, now: u64) {
        if self.lock.is_some_and(|(_, exp)| exp <= now) {
            self.lock = None;
        }
    }
    /// Every dead entry dropped: what the queue key's own expiry comes to once no live entry
    /// refreshes it (the scripts only ever drop dead entries at the head).
    pub fn drop_dead(&mut self, now: u64) {
        self.expire(now);
        self.queue.retain(|_, &mut (_, exp)| exp > now);
        let queue = &self.queue;
        self.epochs.retain(|w, _| queue.contains_key(w));
    }
    /// The first live entry, the dead ones before it removed (into `gone`); `value`'s own entry
    /// counts as live (its script just refreshed it), as the scripts' check of the head.
    fn live_head(&mut self, now: u64, value: u64, gone: &mut Vec<u64>) -> Option<u64> {
        loop {
            let h = self.head()?;
            if h == value || self.queue[&h].1 > now {
                return Some(h);
            }
            self.queue.remove(&h);
            self.epochs.remove(&h);
            gone.push(h);
        }
    }
    pub fn head(&self) -> Option<u64> {
        self.queue
            .iter()
            .min_by_key(|(&w, &(t, _))| (t, w))
            .map(|(&w, _)| w)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Msg {
    /// With the waiter's hint (its clock) and the round's epoch.
    Enqueue {
        hint: u64,
        epoch: u64,
    },
    Attempt {
        ticket: u64,
        epoch: u64,
    },
    /// A round's unlock, moving the waiter's live key to its next epoch first.
    Unlock {
        epoch: u64,
    },
    /// Giving up the place whose epochs go up to `epoch`.
    Leave {
        epoch: u64,
    },
    Release,
    /// A release that names the sender's process's next waiter (`engine::successors`): the
    /// release of `holder`'s key, then the grant rule for `next` where it is the live head with
    /// `ticket`.
    ReleaseTo {
        holder: u64,
        next: u64,
        ticket: u64,
        claim: usize,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Answer {
    /// An enqueue's answer: granted or not, and the ticket the node gave.
    Placed {
        granted: bool,
        ticket: u64,
    },
    Granted,
    Queued,
    Missing,
    /// A release-to's answer: whether it set the key to the named waiter's value.
    Released {
        granted: bool,
    },
}

/// What one message did on a node.
pub struct Step {
    /// The answer to the sender (none for unlock, leave and release: fire and forget).
    pub answer: Option<Answer>,
    /// Whether the node wakes the head of its queue: the key is left free and this message may
    /// have changed who can take it.
    pub publish: bool,
    /// Whether the sender lost its place here: its entry was removed.
    pub lost_place: bool,
    /// The other waiters whose dead entries this message removed from the head.
    pub gone: Vec<u64>,
    /// A release's grant by message: the waiter it set the key to, and the epoch its message names.
    pub grant: Option<(u64, u64)>,
}

/// Which rules the nodes and waiters follow: the real ones, or one broken on purpose to show the
/// checks are not blind.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Rules {
    Real,
    /// Nodes grant to any queued waiter, not only the head.
    AnyQueued,
    /// A waiter whose nodes disagreed on its ticket counts its enqueue complete at once and moves
    /// its entries to its ticket only at its next attempt, not in an agree round of the enqueue.
    LateAgree,
    /// A waiter counts a release's grant by message whatever epoch it names.
    AnyEpoch,
}

impl Node {
    /// Handles `msg` from the waiter with `value` at `now`, atomically, as the node's script does
    /// (the lock key already expired if its time passed: [`Node::expire`]).
    pub fn step(&mut self, now: u64, value: u64, msg: Msg, rules: Rules) -> Step {
        let mut gone = Vec::new();
        // The grant rule: the key free (or already ours) and we are the live head (dead entries
        // before it removed, `pruned`). A key of ours while we are not the head (a release of an
        // earlier round that did not land) is dropped: it must not grant us out of turn, nor keep
        // the head waiting. A free key we cannot take wakes the head when this message may have
        // changed who that is (`moved`, `pruned`, a key freed).
        let grant = |node: &mut Node, moved: bool, gone: &mut Vec<u64>| {
            let ours = node.lock.is_some_and(|(v, _)| v == value);
            if !(ours || node.lock.is_none()) {
                return (false, false);
            }
            let before = gone.len();
            let head = node.live_head(now, value, gone);
            let pruned = gone.len() > before;
            let head_ok = if rules == Rules::AnyQueued {
                node.queue.contains_key(&value)
            } else {
                head == Some(value)
            };
            if head_ok {
                node.lock = Some((value, now + TTL));
                return (true, false);
            }
            node.lock = None;
            (false, ours || pruned || moved)
        };
        let mut publish = false;
        let mut lost = false;
        let mut handed = None;
        let answer = match msg {
            Msg::Enqueue { hint, epoch } => {
                // One above the queue's highest ticket (or the hint, if higher), in place of any
                // stale entry of ours (a lost leave of an earlier place would otherwise keep its
                // older, lower ticket: the model found that trace).
                let top = self.queue.values().map(|&(t, _)| t).max().unwrap_or(0);
                let ticket = hint.max(top + 1);
                let moved = self.queue.insert(value, (ticket, now + TTL)).is_some();
                self.epochs.insert(value, epoch);
                let (granted, wake) = grant(self, moved, &mut gone);
                publish = wake;
                Some(Answer::Placed { granted, ticket })
            }
            // The entry is set to the waiter's ticket (an entry of an earlier place of ours would
            // otherwise rank us by its stale ticket: the model found that trace), never re-added.
            // An entry whose time passed is removed by its own attempt, as a dead head is.
            Msg::Attempt { ticket, epoch } => {
                let out = self.queue.get(&value).is_some_and(|e| e.1 <= now);
                if out {
                    self.queue.remove(&value);
                    self.epochs.remove(&value);
                    lost = true;
                }
                if self.queue.contains_key(&value) {
                    let moved = self.head() == Some(value);
                    let entry = self.queue.get_mut(&value).unwrap();
                    let moved = moved && entry.0 != ticket;
                    *entry = (ticket, now + TTL);
                    self.epochs.insert(value, epoch);
                    let (granted, wake) = grant(self, moved, &mut gone);
                    publish = wake;
                    Some(if granted {
                        Answer::Granted
                    } else {
                        Answer::Queued
                    })
                } else {
                    let freed = self.lock.is_some_and(|(v, _)| v == value);
                    if freed {
                        self.lock = None;
                    }
                    publish = self.lock.is_none() && (freed || out);
                    if publish {
                        publish = self.live_head(now, value, &mut gone).is_some();
                    }
                    Some(Answer::Missing)
                }
            }
            Msg::Unlock { epoch } => {
                // Only where the live key is at the round's epoch (a late copy finds a later one):
                // it moves on (and lives a TTL more), then our key goes.
                let live = self.queue.get(&value).is_some_and(|e| e.1 > now);
                if !live || self.epochs.get(&value).copied() != epoch.checked_sub(1) {
                    return Step {
                        answer: None,
                        publish: false,
                        lost_place: false,
                        gone,
                        grant: None,
                    };
                }
                self.queue.get_mut(&value).unwrap().1 = now + TTL;
                self.epochs.insert(value, epoch);
                if self.lock.is_some_and(|(v, _)| v == value) {
                    self.lock = None;
                    // Where we are the head nobody else can be granted: no wake.
                    publish = self.head() != Some(value);
                }
                None
            }
            // A requeue's leave names its place's last epoch: a live key past it (a new place's)
            // stays, and so does everything else.
            Msg::Leave { epoch }
                if self.queue.get(&value).is_some_and(|e| e.1 > now)
                    && self.epochs.get(&value).is_some_and(|&e| e > epoch) =>
            {
                None
            }
            Msg::Leave { .. } | Msg::Release | Msg::ReleaseTo { .. } => {
                let was = self.head() == Some(value);
                let had = self.queue.remove(&value).is_some();
                self.epochs.remove(&value);
                let freed = self.lock.is_some_and(|(v, _)| v == value);
                if freed {
                    self.lock = None;
                }
                let handover = self.lock.is_none() && (freed || was);
                lost = had;
                let mut answer = None;
                if let Msg::ReleaseTo { next, ticket, .. } = msg {
                    let head = self.head();
                    let ours =
                        head == Some(next) && self.queue.get(&next).is_some_and(|e| e.0 == ticket);
                    let granted = self.lock.is_none() && ours;
                    if granted {
                        // The head's entry keeps its expiry: a release reads no clock.
                        self.lock = Some((next, now + TTL));
                    }
                    answer = Some(Answer::Released { granted });
                }
                if matches!(msg, Msg::Leave { .. }) {
                    publish = handover;
                } else if handover && self.lock.is_none() {
                    // The release hands the key to the live head, by message.
                    if let Some(h) = self.live_head(now, value, &mut gone) {
                        // Until the head's live key expires.
                        self.lock = Some((h, self.queue[&h].1));
                        handed = Some((h, self.epochs[&h]));
                    }
                }
                answer
            }
        };
        Step {
            answer,
            publish,
            lost_place: lost,
            gone,
            grant: handed,
        }
    }
}
