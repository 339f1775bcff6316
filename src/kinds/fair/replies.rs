//! How a fair lock round's replies are read (its waiter is `wait`): the tally that
//! decides it, who granted and answered node by node, and for an enqueue the ticket each node gave
//! and the waiter's ticket from them.

use super::spec::{enqueue_vote, grant_vote};
use crate::algo::quorum::{quorum, Decision, Tally, Vote};
use crate::config::MAX_NODES;
use crate::engine::fanout::Count;
use crate::error::NodeError;
use crate::protocol::cmd::NodeResult;

/// A round's replies: the tally that decides it, and node by node who granted, who answered (the
/// script ran and said so) and, for an enqueue, the ticket each node gave.
pub(super) struct Replies {
    pub(super) tally: Tally,
    enqueue: bool,
    pub(super) granted: u16,
    pub(super) answered: u16,
    tickets: [Option<u64>; MAX_NODES],
}

impl Replies {
    pub(super) fn new(n: usize, enqueue: bool) -> Self {
        Self {
            tally: Tally::new(n),
            enqueue,
            granted: 0,
            answered: 0,
            tickets: [None; MAX_NODES],
        }
    }

    /// The waiter's ticket, and whether a majority gave it: the `q`-th lowest answered. Any
    /// majority's highest would do for the order (`kinds::fair`); this one moves the entries least,
    /// and a majority agrees on no other. (Fewer than `q` answers: the enqueue starts over.)
    pub(super) fn ticket(&self) -> (u64, bool) {
        let q = quorum(self.tally.nodes);
        let mut given: Vec<u64> = self.tickets.iter().flatten().copied().collect();
        given.sort_unstable();
        let ticket = given.get(q - 1).or(given.last()).copied().unwrap_or(0);
        (ticket, given.iter().filter(|t| **t == ticket).count() >= q)
    }

    /// The enqueue's tally as the metrics and the round's event show it: a node counts as holding
    /// the place (`G` or `Q`) only where its entry carries the waiter's ticket; one that gave
    /// another ticket shows as a conflict. So a round that shows a majority holding the place is
    /// one after which the enqueue completed (the fault suite's checker reads it so).
    pub(super) fn shown(&self, ticket: u64) -> Tally {
        let mut shown = Tally::new(self.tally.nodes);
        for (index, given) in self.tickets.iter().enumerate() {
            let vote = match given {
                Some(t) if *t != ticket => Vote::Conflict(*t),
                Some(_) if self.granted & bit(index) != 0 => Vote::Yes,
                Some(_) => Vote::Taken,
                None => continue,
            };
            shown.record(index, vote);
        }
        for (index, error) in &self.tally.failures {
            shown.record(*index, Vote::Failed(error.clone()));
        }
        shown
    }

    fn record(&mut self, index: usize, vote: Vote) -> Decision {
        if !matches!(vote, Vote::Failed(_)) {
            self.answered |= bit(index);
        }
        if matches!(vote, Vote::Yes) {
            self.granted |= bit(index);
        }
        self.tally.record(index, vote)
    }
}

impl Count for Replies {
    fn reply(&mut self, index: usize, reply: NodeResult) -> Decision {
        if !self.enqueue {
            return self.record(index, grant_vote(reply));
        }
        match enqueue_vote(reply) {
            Ok((vote, ticket)) => {
                self.tickets[index] = Some(ticket);
                self.record(index, vote)
            }
            Err(failed) => self.record(index, failed),
        }
    }

    fn fail(&mut self, index: usize, error: NodeError) -> Decision {
        self.record(index, Vote::Failed(error))
    }
}

pub(super) fn bit(index: usize) -> u16 {
    1u16.checked_shl(index as u32).unwrap_or(0)
}
