//! [`Leader`]: an election's leader as a majority of nodes sees it, and the read round that finds
//! it (`read`): every node asked at once with `LEADER_READ`, decided as soon as one term has a
//! majority or none can.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::keys::ElectionKeys;
use super::scripts::LEADER_READ;
use crate::algo::quorum::{quorum, Decision};
use crate::engine::core::Core;
use crate::engine::fanout::{run, Count};
use crate::error::{LockError, NodeError};
use crate::protocol::cmd::{Cmd, NodeResult, Reply};

/// The leader of an election: what it published and its term, shown only when a majority of
/// nodes hold its leadership and its record, live.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leader {
    /// What the leader published ([`crate::Election::campaign`]'s value, or its latest
    /// [`crate::Leadership::proclaim`]).
    pub value: Bytes,
    /// Its term: the fencing token of its leadership, larger than every earlier leader's.
    pub term: u64,
    /// 1 when elected, one more per proclaim: orders the values of one term.
    pub revision: u64,
}

impl Leader {
    /// `(term, revision)`: the order observers report leaders in.
    pub(super) fn order(&self) -> (u64, u64) {
        (self.term, self.revision)
    }
}

/// Reads the leader of the election at `keys` (see [`Leader`]).
///
/// # Errors
/// [`LockError::QuorumNotReached`] when too few nodes answered to tell (the failed ones could be
/// holding a leader the others show); [`LockError::Closed`] after a shutdown;
/// [`LockError::Overloaded`] when no round slot came within `ttl`.
pub(super) async fn read(
    core: &Core,
    keys: &ElectionKeys,
    ttl: Duration,
) -> Result<Option<Leader>, LockError> {
    if core.is_closed() {
        return Err(LockError::Closed);
    }
    let cmd = Cmd::ScriptBytes {
        script: &LEADER_READ,
        keys: keys.both(),
        args: Arc::from([]),
    };
    let _slot = core.admit(Some(Instant::now() + ttl)).await?;
    let start = Instant::now();
    let mut reading = Reading::new(core.nodes().len());
    run(
        core.nodes(),
        &cmd,
        core.round_deadline(start, ttl, None),
        true,
        &mut reading,
    )
    .await;
    reading.outcome()
}

/// One node's answer: the live leader it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shown {
    term: u64,
    revision: u64,
    value: Bytes,
}

/// A read round's answers.
#[derive(Debug)]
struct Reading {
    nodes: usize,
    quorum: usize,
    /// Each node that answered: the leader it shows, if any.
    shown: Vec<Option<Shown>>,
    answered: usize,
    failures: Vec<(usize, NodeError)>,
}

impl Reading {
    fn new(nodes: usize) -> Self {
        Self {
            nodes,
            quorum: quorum(nodes),
            shown: Vec::with_capacity(nodes),
            answered: 0,
            failures: Vec::new(),
        }
    }

    /// The term most nodes show, and on how many.
    fn best(&self) -> Option<(u64, usize)> {
        let terms = self.shown.iter().flatten().map(|s| s.term);
        let mut best: Option<(u64, usize)> = None;
        for term in terms.clone() {
            let on = terms.clone().filter(|t| *t == term).count();
            if best.is_none_or(|(_, most)| on > most) {
                best = Some((term, on));
            }
        }
        best
    }

    fn decision(&self) -> Decision {
        let most = self.best().map_or(0, |(_, on)| on);
        let pending = self.nodes - self.answered - self.failures.len();
        if most >= self.quorum {
            Decision::Won
        } else if most + pending < self.quorum {
            // Neither a shown term nor one of the silent nodes' can reach a majority now.
            Decision::Lost
        } else {
            Decision::Open
        }
    }

    /// The leader a majority shows (its latest revision among them); none when no term can have
    /// a majority, counting the nodes that did not answer as possibly showing the best one.
    fn outcome(self) -> Result<Option<Leader>, LockError> {
        let best = self.best();
        if let Some((term, _)) = best.filter(|&(_, on)| on >= self.quorum) {
            let latest = self
                .shown
                .into_iter()
                .flatten()
                .filter(|s| s.term == term)
                .max_by_key(|s| s.revision)
                .expect("a term shown on a majority is shown");
            return Ok(Some(Leader {
                value: latest.value,
                term,
                revision: latest.revision,
            }));
        }
        let most = best.map_or(0, |(_, on)| on);
        if most + (self.nodes - self.answered) >= self.quorum {
            return Err(LockError::QuorumNotReached {
                ok: self.answered,
                needed: self.quorum,
                failures: self.failures,
            });
        }
        Ok(None)
    }
}

impl Count for Reading {
    fn reply(&mut self, index: usize, reply: NodeResult) -> Decision {
        match parse(reply) {
            Ok(shown) => {
                self.shown.push(shown);
                self.answered += 1;
            }
            Err(e) => self.failures.push((index, e)),
        }
        self.decision()
    }

    fn fail(&mut self, index: usize, error: NodeError) -> Decision {
        self.failures.push((index, error));
        self.decision()
    }
}

/// Reads `LEADER_READ`'s answer.
fn parse(reply: NodeResult) -> Result<Option<Shown>, NodeError> {
    let data = match reply? {
        Reply::Nil => return Ok(None),
        Reply::Data(data) => data,
        other => return Err(other.unexpected("leader read script")),
    };
    let bad = || NodeError::Protocol("leader read script: answer is not of its format".into());
    let mut fields = data.splitn(4, |&b| b == b'|');
    let mut number = || -> Result<u64, NodeError> {
        let field = fields.next().ok_or_else(bad)?;
        std::str::from_utf8(field)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)
    };
    let (term, revision, _pttl) = (number()?, number()?, number()?);
    let head = data.len() - fields.next().ok_or_else(bad)?.len();
    Ok(Some(Shown {
        term,
        revision,
        value: data.slice(head..),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(term: u64, revision: u64, value: &'static str) -> NodeResult {
        Ok(Reply::Data(Bytes::from(format!(
            "{term:020}|{revision:020}|900|{value}"
        ))))
    }

    #[test]
    fn a_term_on_a_majority_is_the_leader_at_its_latest_revision() {
        let mut r = Reading::new(3);
        assert_eq!(r.reply(0, shown(7, 1, "a|b")), Decision::Open);
        assert_eq!(r.reply(1, shown(7, 2, "c")), Decision::Won);
        let leader = r.outcome().unwrap().unwrap();
        assert_eq!((leader.term, leader.revision), (7, 2));
        assert_eq!(&leader.value[..], b"c");
        let mut r = Reading::new(3);
        r.reply(0, shown(7, 1, "a|b"));
        r.reply(1, shown(7, 1, "a|b"));
        assert_eq!(&r.outcome().unwrap().unwrap().value[..], b"a|b");
    }

    #[test]
    fn no_majority_is_no_leader_unless_silent_nodes_could_make_one() {
        let mut r = Reading::new(3);
        r.reply(0, shown(7, 1, "a"));
        assert_eq!(r.reply(1, Ok(Reply::Nil)), Decision::Open);
        assert_eq!(r.reply(2, shown(9, 1, "b")), Decision::Lost);
        assert!(matches!(r.outcome(), Ok(None)));
        // Node 2 failed: it could hold term 7 too.
        let mut r = Reading::new(3);
        r.reply(0, shown(7, 1, "a"));
        r.reply(1, Ok(Reply::Nil));
        assert_eq!(r.fail(2, NodeError::Timeout), Decision::Lost);
        assert!(matches!(
            r.outcome(),
            Err(LockError::QuorumNotReached { .. })
        ));
        // Two of three say none: decided at once.
        let mut r = Reading::new(3);
        r.reply(0, Ok(Reply::Nil));
        assert_eq!(r.reply(1, Ok(Reply::Nil)), Decision::Lost);
        assert!(matches!(r.outcome(), Ok(None)));
    }

    #[test]
    fn garbage_is_the_nodes_failure() {
        for reply in [
            Ok(Reply::Int(1)),
            Ok(Reply::Data(Bytes::from_static(b"7|x|1|v"))),
            Ok(Reply::Data(Bytes::from_static(b"7|1|1"))),
        ] {
            assert!(parse(reply).is_err());
        }
        assert_eq!(parse(Ok(Reply::Nil)).unwrap(), None);
    }
}
