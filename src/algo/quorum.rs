//! The quorum tally: counts each node's vote and decides as soon as the majority is won or lost.
//!
//! Plain logic, no I/O: the fan-out (`crate::engine::fanout`) feeds it replies as they arrive. Votes
//! are read from replies here for the two shapes most kinds share (`SET NX`, and scripts answering
//! `1`/`0`/`-1`); a kind whose script answers otherwise reads its own (see `crate::kinds`).

use super::reply::{NodeResult, Reply};
use crate::error::NodeError;

/// The majority of `n` nodes.
pub fn quorum(n: usize) -> usize {
    n / 2 + 1
}

/// The quorum of a semaphore with `permits` permits over `n` nodes: `floor(K·N/(K+1)) + 1`, the
/// smallest q for which K+1 holders of q nodes each cannot fit on N nodes of K permits each
/// ((K+1)·q > K·N; the derivation is in `crate::kinds::semaphore`). A majority for K = 1; every node
/// once K >= N. `permits` 0 is treated as 1 (callers refuse it before).
pub fn permit_quorum(n: usize, permits: u64) -> usize {
    let k = permits.max(1) as u128;
    let n128 = n as u128;
    // u128: K·N cannot overflow for any u64 K and N <= 9.
    ((k * n128 / (k + 1)) as usize + 1).min(n.max(1))
}

/// One node's answer, as the algorithm reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Vote {
    /// Done for us: `SET NX` said OK, or the script found our value.
    Yes,
    /// Released, and a client elsewhere has marked itself as waiting (release answered 2).
    YesWaiters,
    /// Another owner's value is there (`SET NX` said nil, or the script answered `-1`).
    Taken,
    /// The key is gone (the script answered `0`): our lock expired there.
    Gone,
    /// Fenced acquire: set, and the node's fence counter for the resource was this.
    YesAt(u64),
    /// Fenced acquire: taken, the node's fence counter was this, and the holder's key had this many
    /// ms to live there (`None`: no expiry).
    TakenAt(u64, Option<u64>),
    /// Fence commit refused: the node's counter is already at or above the proposed token.
    Conflict(u64),
    /// Semaphore acquire refused: the node holds this resource as a semaphore of this many permits,
    /// not the number asked (callers on one resource disagree; the round is lost at once).
    Mismatch(u64),
    /// No usable answer: error, timeout, disconnect.
    Failed(NodeError),
}

impl Vote {
    /// Reads a `SET NX PX` reply.
    pub(crate) fn of_set(result: NodeResult) -> Self {
        match result {
            Ok(Reply::Ok) => Self::Yes,
            Ok(Reply::Nil) => Self::Taken,
            Ok(other) => Self::Failed(other.unexpected("SET NX PX")),
            Err(e) => Self::Failed(e),
        }
    }

    /// Reads a release/extend script reply (`1` ours, `0` gone, `-1` someone else's).
    /// `WRONGTYPE` means another kind of key sits at the lock's key: not ours.
    pub(crate) fn of_script(result: NodeResult) -> Self {
        match result {
            Ok(Reply::Int(1)) => Self::Yes,
            Ok(Reply::Int(2)) => Self::YesWaiters,
            Ok(Reply::Int(0)) => Self::Gone,
            Ok(Reply::Int(-1)) => Self::Taken,
            Err(NodeError::Server(msg)) if msg.contains("WRONGTYPE") => Self::Taken,
            // An integer outside the script's answers is as wrong as a wrong type.
            Ok(Reply::Int(i)) => Self::Failed(NodeError::Protocol(format!(
                "lock script: integer {i} is none of its answers (-1, 0, 1, 2)"
            ))),
            Ok(other) => Self::Failed(other.unexpected("lock script")),
            Err(e) => Self::Failed(e),
        }
    }
}

/// Where a round stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Neither won nor lost yet.
    Open,
    /// A majority voted yes.
    Won,
    /// Too many nodes voted otherwise for a majority to be possible.
    Lost,
}

/// The running count of one round.
#[derive(Debug, Clone)]
pub struct Tally {
    pub(crate) nodes: usize,
    pub(crate) yes: usize,
    pub(crate) taken: usize,
    pub(crate) gone: usize,
    /// Yes votes that reported a client waiting elsewhere.
    pub(crate) waiters: usize,
    /// Which nodes voted yes / taken / gone (bit = node index; at most 9 nodes).
    pub(crate) yes_mask: u16,
    pub(crate) taken_mask: u16,
    pub(crate) gone_mask: u16,
    /// Release rounds: "gone" counts toward the goal (see [`Tally::for_release`]); the release rule
    /// lives there and nowhere else.
    release: bool,
    /// Fence commits refused because a node's counter was already at or above the proposal.
    pub(crate) conflicts: usize,
    /// The highest fence counter any node reported in this round.
    pub(crate) max_counter: u64,
    /// The holder's time to live, ms, on each node that voted taken and said (see
    /// [`Tally::free_in`]); empty (and unallocated) for kinds whose acquire does not say.
    taken_ttls: Vec<u64>,
    /// Failed nodes by index; empty (and unallocated) on the happy path.
    pub(crate) failures: Vec<(usize, NodeError)>,
    /// Yes votes needed to win: a majority, or a kind's own quorum (semaphores).
    needed: usize,
    /// A semaphore's permit count as a node reported it when it differs from the one asked.
    pub(crate) mismatch: Option<u64>,
}

impl Tally {
    /// An empty tally for a round over `nodes` nodes.
    pub fn new(nodes: usize) -> Self {
        Self {
            nodes,
            yes: 0,
            taken: 0,
            gone: 0,
            waiters: 0,
            yes_mask: 0,
            taken_mask: 0,
            gone_mask: 0,
            release: false,
            conflicts: 0,
            max_counter: 0,
            taken_ttls: Vec::new(),
            failures: Vec::new(),
            needed: quorum(nodes),
            mismatch: None,
        }
    }

    /// An empty tally that needs `needed` yes votes instead of a majority (at least a majority, at
    /// most every node).
    pub fn with_quorum(nodes: usize, needed: usize) -> Self {
        Self {
            needed: needed.clamp(quorum(nodes), nodes.max(1)),
            ..Self::new(nodes)
        }
    }

    /// A tally for a release round: won once at least one node deleted our key and, with the nodes
    /// where it was already gone (expired, or never landed), no majority can hold our value any more.
    /// A lock acquired on a bare majority leaves the other nodes answering "gone" to its release;
    /// counting them against would call a successful release a failure.
    pub fn for_release(nodes: usize) -> Self {
        Self {
            release: true,
            ..Self::new(nodes)
        }
    }

    /// Yes votes this round needs (a majority unless made [`with_quorum`](Self::with_quorum)).
    pub fn quorum(&self) -> usize {
        self.needed
    }

    /// Counts node `index`'s vote and says whether the round is decided.
    pub fn record(&mut self, index: usize, vote: Vote) -> Decision {
        let bit = 1u16.checked_shl(index as u32).unwrap_or(0);
        match &vote {
            Vote::Yes | Vote::YesWaiters | Vote::YesAt(_) => self.yes_mask |= bit,
            Vote::Taken | Vote::TakenAt(..) => self.taken_mask |= bit,
            Vote::Gone => self.gone_mask |= bit,
            Vote::Conflict(_) | Vote::Mismatch(_) | Vote::Failed(_) => {}
        }
        match vote {
            Vote::Yes => self.yes += 1,
            Vote::YesWaiters => {
                self.yes += 1;
                self.waiters += 1;
            }
            Vote::Taken => self.taken += 1,
            Vote::Gone => self.gone += 1,
            Vote::YesAt(counter) => {
                self.yes += 1;
                self.max_counter = self.max_counter.max(counter);
            }
            Vote::TakenAt(counter, ttl) => {
                self.taken += 1;
                self.max_counter = self.max_counter.max(counter);
                self.taken_ttls.extend(ttl);
            }
            Vote::Conflict(counter) => {
                self.conflicts += 1;
                self.max_counter = self.max_counter.max(counter);
            }
            Vote::Mismatch(permits) => self.mismatch = Some(permits),
            Vote::Failed(e) => self.failures.push((index, e)),
        }
        self.decision()
    }

    /// Where the round stands now.
    pub fn decision(&self) -> Decision {
        if self.release {
            let against = self.taken + self.conflicts + self.failures.len();
            return if self.yes > 0 && self.yes + self.gone >= self.quorum() {
                Decision::Won
            } else if against > self.nodes - self.quorum() {
                Decision::Lost
            } else {
                Decision::Open
            };
        }
        let against = self.taken + self.gone + self.conflicts + self.failures.len();
        // Callers disagreeing on a semaphore's size: no grant, whatever the others said.
        if self.mismatch.is_some() {
            return Decision::Lost;
        }
        if self.yes >= self.quorum() {
            Decision::Won
        } else if against > self.nodes - self.quorum() {
            Decision::Lost
        } else {
            Decision::Open
        }
    }

    /// Whether a majority voted yes.
    pub fn won(&self) -> bool {
        self.decision() == Decision::Won
    }

    /// For a lost acquire: how soon, at the earliest, the holder's keys will have expired on enough
    /// of the nodes that voted taken for a quorum to be possible again — if every taken vote said
    /// (the holder may still extend or release before). Nodes that failed count as still against;
    /// nodes that had not answered when the round was decided (it stops as soon as it is lost) as
    /// possibly free, so this is the earliest moment, not a promise. Durations on each node's own
    /// clock, measured from the node's reading, so slightly later than from the reply's arrival: a
    /// retry timed to it reaches the node after the key's expiry, never before (see
    /// `crate::engine::acquire`).
    pub fn free_in(&self) -> Option<std::time::Duration> {
        if self.taken == 0 || self.taken_ttls.len() < self.taken {
            return None;
        }
        let against = self.taken + self.gone + self.conflicts + self.failures.len();
        let must_expire = (against + self.needed).checked_sub(self.nodes)?;
        if must_expire == 0 || must_expire > self.taken {
            return None;
        }
        let mut ttls = self.taken_ttls.clone();
        ttls.sort_unstable();
        Some(std::time::Duration::from_millis(ttls[must_expire - 1]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorum_is_strict_majority() {
        let expected = [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (9, 5)];
        for (n, q) in expected {
            assert_eq!(quorum(n), q, "n={n}");
        }
    }

    #[test]
    fn permit_quorum_is_the_smallest_that_excludes_k_plus_one_holders() {
        for n in 1..=9usize {
            assert_eq!(permit_quorum(n, 1), quorum(n), "K = 1 is a majority, n={n}");
            for k in 1..=12u64 {
                let q = permit_quorum(n, k);
                let kn = k as usize * n;
                assert!((k as usize + 1) * q > kn, "n={n} k={k} q={q} admits K+1");
                assert!(
                    q == 1 || (k as usize + 1) * (q - 1) <= kn,
                    "n={n} k={k}: q-1 would do"
                );
                assert!(q <= n);
            }
        }
        assert_eq!(permit_quorum(5, 2), 4);
        assert_eq!(permit_quorum(5, 4), 5);
        assert_eq!(permit_quorum(3, u64::MAX), 3);
    }

    #[test]
    fn a_mismatch_loses_the_round_and_a_wider_quorum_needs_more_yes() {
        let mut t = Tally::with_quorum(5, 4);
        for i in 0..3 {
            assert_eq!(t.record(i, Vote::Yes), Decision::Open);
        }
        assert_eq!(t.record(3, Vote::Yes), Decision::Won);
        let mut t = Tally::with_quorum(5, 4);
        t.record(0, Vote::Yes);
        assert_eq!(t.record(1, Vote::Taken), Decision::Open);
        assert_eq!(
            t.record(2, Vote::Taken),
            Decision::Lost,
            "5 - 4 = 1 refusal to spare"
        );
        let mut t = Tally::new(3);
        t.record(0, Vote::Yes);
        assert_eq!(t.record(1, Vote::Mismatch(3)), Decision::Lost);
        assert_eq!(t.mismatch, Some(3));
    }

    /// Records `votes` into `t` in order, each with the decision expected right after it (node
    /// index, vote, decision): a round's replies as the tally reads them one by one.
    fn replay(mut t: Tally, votes: Vec<(usize, Vote, Decision)>) -> Tally {
        for (i, vote, expect) in votes {
            assert_eq!(t.record(i, vote), expect, "node {i}");
        }
        t
    }

    #[test]
    fn decides_early_on_win_and_on_loss() {
        use Decision::{Lost, Open, Won};
        let (timeout, disconnected) = (NodeError::Timeout, NodeError::Disconnected);
        for (votes, failed) in [
            // Won at the third yes of five, a timeout among them.
            (
                vec![
                    (0, Vote::Yes, Open),
                    (3, Vote::Failed(timeout.clone()), Open),
                    (1, Vote::Yes, Open),
                    (4, Vote::Yes, Won),
                ],
                (3, timeout),
            ),
            // Lost at the third refusal of five, a lost connection among them.
            (
                vec![
                    (0, Vote::Taken, Open),
                    (1, Vote::Failed(disconnected.clone()), Open),
                    (2, Vote::Gone, Lost),
                ],
                (1, disconnected),
            ),
        ] {
            assert_eq!(replay(Tally::new(5), votes).failures, vec![failed]);
        }
    }

    #[test]
    fn every_vote_combination_decides_like_a_majority_count() {
        // Exhaustive over N = 1..=5 and every sequence of yes/no: the final decision is Won iff yes > N/2.
        for n in 1..=5usize {
            for mask in 0..(1u32 << n) {
                let mut t = Tally::new(n);
                let mut decided = Decision::Open;
                for i in 0..n {
                    let vote = if mask & (1 << i) != 0 {
                        Vote::Yes
                    } else {
                        Vote::Taken
                    };
                    decided = t.record(i, vote);
                    if decided != Decision::Open {
                        break;
                    }
                }
                let yes = mask.count_ones() as usize;
                let expect = if yes > n / 2 {
                    Decision::Won
                } else {
                    Decision::Lost
                };
                assert_eq!(decided, expect, "n={n} mask={mask:b}");
            }
        }
    }

    #[test]
    fn a_release_counts_gone_nodes_toward_the_goal() {
        // Lock held on 3 of 5: the other two answer "gone"; two deletes already leave no majority.
        let votes = vec![
            (3, Vote::Gone, Decision::Open),
            (4, Vote::Gone, Decision::Open),
            (0, Vote::Yes, Decision::Won),
        ];
        replay(Tally::for_release(5), votes);
        // Everything gone and nothing deleted: not won (the lock had expired).
        let mut t = Tally::for_release(3);
        for i in 0..3 {
            assert_eq!(t.record(i, Vote::Gone), Decision::Open);
        }
        let mut t = Tally::for_release(3);
        t.record(0, Vote::Taken);
        assert_eq!(
            t.record(1, Vote::Failed(NodeError::Timeout)),
            Decision::Lost
        );
    }

    #[test]
    fn reads_replies() {
        assert_eq!(Vote::of_set(Ok(Reply::Ok)), Vote::Yes);
        assert_eq!(Vote::of_set(Ok(Reply::Nil)), Vote::Taken);
        assert_eq!(Vote::of_script(Ok(Reply::Int(-1))), Vote::Taken);
        assert_eq!(Vote::of_script(Ok(Reply::Int(0))), Vote::Gone);
        assert_eq!(
            Vote::of_script(Err(NodeError::Server("WRONGTYPE Operation".into()))),
            Vote::Taken
        );
        assert!(matches!(Vote::of_set(Ok(Reply::Int(3))), Vote::Failed(_)));
    }

    #[test]
    fn a_lost_round_is_free_when_enough_taken_keys_expire() {
        let mut t = Tally::new(5);
        for (i, ttl) in [(0, 900), (1, 300), (2, 600)] {
            t.record(i, Vote::TakenAt(7, Some(ttl)));
        }
        // Three against, two may still be free: the first expiry lets a majority win.
        assert_eq!(t.free_in(), Some(std::time::Duration::from_millis(300)));
        // A fourth against: two of the taken keys must go.
        t.record(3, Vote::TakenAt(7, Some(100)));
        assert_eq!(t.free_in(), Some(std::time::Duration::from_millis(300)));
        // A failed node counts as against for good.
        t.record(4, Vote::Failed(NodeError::Timeout));
        assert_eq!(t.free_in(), Some(std::time::Duration::from_millis(600)));

        // A taken vote that did not say (no expiry, or a plain SET NX): unknown.
        let mut t = Tally::new(3);
        t.record(0, Vote::TakenAt(1, None));
        t.record(1, Vote::TakenAt(1, Some(50)));
        assert_eq!(t.free_in(), None);
        let mut t = Tally::new(3);
        t.record(0, Vote::Taken);
        t.record(1, Vote::Taken);
        assert_eq!(t.free_in(), None);
        // Lost by failures alone: no holder to wait out.
        let mut t = Tally::new(3);
        t.record(0, Vote::TakenAt(1, Some(50)));
        t.record(1, Vote::Failed(NodeError::Timeout));
        t.record(2, Vote::Failed(NodeError::Timeout));
        assert_eq!(t.free_in(), None);
    }
}
