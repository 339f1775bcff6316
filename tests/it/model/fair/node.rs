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
    /// waiter -> (ticket, expires_at)
    pub queue: BTreeMap<u64, (u64, u64)>,
}

impl Node {
    /// Drops expired entries and an expired key; returns the waiters whose entries went.
    pub fn prune(&mut self, now: u64) -> Vec<u64> {
        if self.lock.is_some_and(|(_, exp)| exp <= now) {
            self.lock = None;
        }
        let gone: Vec<u64> = self
            .queue
            .iter()
            .filter(|(_, &(_, exp))| exp <= now)
            .map(|(&w, _)| w)
            .collect();
        for w in &gone {
            self.queue.remove(w);
        }
        gone
    }
    pub fn head(&self) -> Option<u64> {
        self.queue
            .iter()
            .min_by_key(|(&w, &(t, _))| (t, w))
            .map(|(&w, _)| w)
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Msg {
    Ticket,
    Enqueue { ticket: u64 },
    Attempt { ticket: u64 },
    Unlock,
    Leave,
    Release,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Answer {
    Max(u64),
    Granted,
    Queued,
    Missing,
}

/// What one message did on a node.
pub struct Step {
    /// The answer to the sender (none for unlock, leave and release: fire and forget).
    pub answer: Option<Answer>,
    /// Whether the node wakes the head of its queue: the key is left free and someone else may take it.
    pub publish: bool,
    /// Whether the sender lost its place here: its entry was removed, or was a stale one of an earlier
    /// place.
    pub lost_place: bool,
}

impl Node {
    /// Handles `msg` from the waiter with `value` at `now`, atomically, as the node's script does
    /// (expired entries already pruned). `head_rule`: grant only to the head of the queue (the real
    /// rule), or to any queued waiter (the broken rule the order check must catch).
    pub fn step(&mut self, now: u64, value: u64, msg: Msg, head_rule: bool) -> Step {
        // The grant rule: the key free (or already ours) and we are the head. A key of ours while we
        // are not the head (a release of an earlier round that did not land) is dropped: it must
        // not grant us out of turn, nor keep the head waiting.
        let grant = |node: &mut Node, head_rule: bool| {
            let ours = node.lock.is_some_and(|(v, _)| v == value);
            let head_ok = if head_rule {
                node.head() == Some(value)
            } else {
                node.queue.contains_key(&value)
            };
            if (ours || node.lock.is_none()) && head_ok {
                node.lock = Some((value, now + TTL));
                Answer::Granted
            } else {
                if ours {
                    node.lock = None;
                }
                Answer::Queued
            }
        };
        // Whether this node wakes its head: the key is left free and someone else may take it.
        let mut publish = false;
        let mut lost = false;
        let answer = match msg {
            Msg::Ticket => Some(Answer::Max(
                self.queue.values().map(|&(t, _)| t).max().unwrap_or(0),
            )),
            Msg::Enqueue { ticket } => {
                // The new ticket replaces any stale entry of ours (a lost leave of an earlier place
                // would otherwise keep its older, lower ticket: the model found that trace).
                self.queue.insert(value, (ticket, now + TTL));
                let answer = grant(self, head_rule);
                publish = answer == Answer::Queued && self.lock.is_none();
                Some(answer)
            }
            // Only the current place's entry counts: an entry of an earlier place of ours (its
            // leave and our new enqueue both lost there) would rank us by a stale, lower ticket —
            // the model found that trace. It is dropped, and the node says we are missing.
            Msg::Attempt { ticket } => match self.queue.get_mut(&value) {
                Some(entry) if entry.0 == ticket => {
                    entry.1 = now + TTL;
                    let answer = grant(self, head_rule);
                    publish = answer == Answer::Queued && self.lock.is_none();
                    Some(answer)
                }
                Some(_) => {
                    self.queue.remove(&value);
                    lost = true;
                    publish = self.lock.is_none();
                    Some(Answer::Missing)
                }
                None => Some(Answer::Missing),
            },
            Msg::Unlock => {
                if self.lock.is_some_and(|(v, _)| v == value) {
                    self.lock = None;
                    // Where we are the head nobody else can be granted: no wake.
                    publish = self.head() != Some(value);
                }
                None
            }
            Msg::Leave | Msg::Release => {
                let had = self.queue.remove(&value).is_some();
                if self.lock.is_some_and(|(v, _)| v == value) {
                    self.lock = None;
                }
                publish = self.lock.is_none();
                lost = had;
                None
            }
        };
        Step {
            answer,
            publish,
            lost_place: lost,
        }
    }
}
