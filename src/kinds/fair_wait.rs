//! The fair lock's waiting loop (its protocol and argument are in `kinds::fair`): the enqueue round,
//! the agree round when the nodes' tickets disagreed, then attempts at each release notification or
//! retry pause, until granted on a majority with enough validity, or the wait ends and the waiter
//! gives its place up.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::fair::{
    attempt_cmd, enqueue_cmd, enqueue_vote, grant_vote, leave_cmd, unlock_cmd, wake_channel,
    wake_name,
};
use super::fair_scripts::ENQUEUE;
use crate::algo::quorum::{quorum, Decision, Tally, Vote};
use crate::algo::retry::Wait;
use crate::algo::timing::millis;
use crate::algo::value::LockValue;
use crate::algo::verdict::acquire_error;
use crate::config::MAX_NODES;
use crate::engine::core::Core;
use crate::engine::fanout::{run, Count};
use crate::error::{LockError, NodeError};
use crate::lock::{Grant, Lock};
use crate::observe::Op;
use crate::protocol::cmd::{Cmd, NodeResult};
use crate::protocol::spec::Target;

/// What one enqueue or attempt round came to.
enum Outcome {
    /// Granted on a majority with enough validity.
    Granted(Lock),
    /// Still queued on enough nodes; wait for the next turn. After an enqueue: the waiter's ticket,
    /// and whether a majority answered it (the enqueue completed; else the agree round follows).
    Queued(LockError, Option<(u64, bool)>),
    /// Missing from too many queues (or the enqueue did not land on a majority): start over.
    Requeue(LockError),
}

/// The fair lock's waiting loop, over an engine's core: a kind's own loop beside the engine's
/// shared one (`Core::acquire`), built from the engine's pieces (admission, fan-out, notifier).
pub(crate) struct FairWait<'a> {
    pub(crate) core: &'a Core,
}

impl FairWait<'_> {
    /// [`crate::Redlock::acquire_fair`].
    pub(crate) async fn acquire_fair(
        &self,
        target: Target,
        ttl: Duration,
        patience: Wait,
    ) -> Result<Lock, LockError> {
        let s = self.core.settings();
        let ttl = self.core.check_ttl(ttl)?;
        let began = Instant::now();
        let deadline = patience.deadline(began, s.acquire_timeout);
        // One try: the enqueue and, if the tickets disagree, the agree round.
        let budget = match patience {
            Wait::Once => self.core.round_timeout(ttl) * 2,
            _ => s.retry.budget(s.timing.node_timeout(ttl)),
        };
        // Without any bound the loop's `end` is a year off: as good as never for a lock waiter.
        let end = patience
            .budget_end(deadline, began, budget)
            .unwrap_or_else(|| began + Duration::from_secs(365 * 24 * 3600));
        let code = target.kind.spec().code;
        let value = LockValue::tagged(self.core.tag(), code)
            .map_err(|e| LockError::Random(e.to_string()))?;
        // Gives the place up on every node unless the lock is handed out: on error, timeout, or
        // this future being dropped mid-wait.
        let leave = Fire {
            core: self.core,
            cmd: Some(leave_cmd(&target.keys, value)),
            ttl,
            nodes: u16::MAX,
        };
        let key = &target.keys.as_slice()[0];
        // Woken only by messages naming us (we are a node's new head) or naming nobody; the
        // keepalive pause is the safety net for lost ones.
        let notifier = self.core.notifier();
        let subscription = s
            .notify_releases
            .then(|| notifier.subscribe_lingering(&wake_channel(key, value), wake_name(value)));
        let notify = subscription.as_ref().map(|sub| sub.notify());
        // Attempts are also the waiter's keepalive: at most a quarter TTL apart.
        let pause = || s.retry.next_delay().min(ttl / 4);
        let mut attempts = 0u32;
        let mut placed_once = false;
        let mut last_err = None;
        let enqueue = enqueue_cmd(&target.keys, value, millis(ttl));
        'enqueue: while Instant::now() < end {
            attempts += 1;
            let mut woken = armed(&notify);
            let (attempt, mut at_once) = match self.round(&target, &enqueue, value, ttl, end).await
            {
                Outcome::Granted(mut lock) => {
                    lock.set_attempts(attempts);
                    leave.disarm();
                    return Ok(lock);
                }
                Outcome::Queued(err, None) => {
                    // Admission refused: the enqueue was not sent.
                    last_err = Some(err);
                    wait(woken, pause(), end).await;
                    continue;
                }
                Outcome::Queued(err, Some((ticket, complete))) => {
                    last_err = Some(err);
                    placed_once = true;
                    // The agree round goes at once: the enqueue completes with it.
                    let attempt = attempt_cmd(&target.keys, value, millis(ttl), ticket);
                    (attempt, !complete)
                }
                Outcome::Requeue(err) => {
                    self.requeue(&target, value, ttl);
                    last_err = Some(err);
                    wait(woken, pause(), end).await;
                    continue;
                }
            };
            loop {
                if Instant::now() >= end {
                    break 'enqueue;
                }
                if !at_once {
                    wait(woken, pause(), end).await;
                }
                at_once = false;
                attempts += 1;
                woken = armed(&notify);
                match self.round(&target, &attempt, value, ttl, end).await {
                    Outcome::Granted(mut lock) => {
                        lock.set_attempts(attempts);
                        leave.disarm();
                        return Ok(lock);
                    }
                    Outcome::Queued(err, _) => last_err = Some(err),
                    Outcome::Requeue(err) => {
                        self.requeue(&target, value, ttl);
                        last_err = Some(err);
                        wait(woken, pause(), end).await;
                        continue 'enqueue;
                    }
                }
            }
        }
        drop(leave);
        Err(match last_err {
            Some(err @ LockError::QuorumNotReached { .. }) if !placed_once => err,
            other => LockError::Timeout {
                attempts,
                last: other.map(Box::new),
            },
        })
    }

    /// Out of every queue before a new enqueue, so no stale entry of ours blocks anyone.
    fn requeue(&self, target: &Target, value: LockValue, ttl: Duration) {
        self.core.release_retry().fire(
            self.core.nodes(),
            &leave_cmd(&target.keys, value),
            Instant::now() + ttl,
        );
    }

    /// One enqueue or attempt round: granted, still queued, or to start over.
    async fn round(
        &self,
        target: &Target,
        cmd: &Cmd,
        value: LockValue,
        ttl: Duration,
        end: Instant,
    ) -> Outcome {
        let s = self.core.settings();
        let Ok(_slot) = self.core.admit(Some(end)).await else {
            let refused = LockError::Timeout {
                attempts: 0,
                last: None,
            };
            return Outcome::Queued(refused, None);
        };
        let jumps = self.core.jump_mark();
        let start = Instant::now();
        // Keys of ours this round set are released unless the lock is handed out (the place kept):
        // where a node may have set one, every node until the replies say.
        let mut unlock = Fire {
            core: self.core,
            cmd: Some(unlock_cmd(&target.keys, value)),
            ttl,
            nodes: u16::MAX,
        };
        let deadline = self.core.round_deadline(start, ttl, None);
        let n = self.core.nodes().len();
        let enqueue = matches!(cmd, Cmd::Script { script, .. } if std::ptr::eq(*script, &ENQUEUE));
        let mut count = Replies::new(n, enqueue);
        // An enqueue waits for every answer: its ticket is the highest of them all.
        run(self.core.nodes(), cmd, deadline, !enqueue, &mut count).await;
        let elapsed = start.elapsed();
        // Keys may be ours where a node granted or did not answer.
        unlock.nodes = count.granted | !count.answered;
        let won = count.tally.won();
        let placed = enqueue.then(|| count.ticket());
        let tally = match placed {
            Some((ticket, _)) if !won => count.shown(ticket),
            _ => count.tally,
        };
        self.core.metrics().round(Op::Acquire, &tally, elapsed);
        if won {
            let min = s.timing.min_validity(ttl);
            if let Some(validity) = s.timing.validity(ttl, elapsed).filter(|v| *v >= min) {
                unlock.disarm();
                let grant = Grant {
                    prefix_len: s.key_prefix.len(),
                    key_format: s.key_format,
                    value,
                    ttl,
                    valid_until: start + elapsed + validity,
                    tally,
                    jumps,
                };
                return Outcome::Granted(Lock::granted(target, grant));
            }
            let left = s.timing.validity(ttl, elapsed).unwrap_or_default();
            return Outcome::Queued(LockError::ValidityExpired { left, min }, placed);
        }
        // Missing from so many queues that no majority can grant us: our place is gone (an
        // enqueue's is when fewer than a majority answered it).
        let missing = if enqueue {
            n - count.answered.count_ones() as usize
        } else {
            tally.gone
        };
        let err = acquire_error(tally);
        if missing > n - quorum(n) {
            Outcome::Requeue(err)
        } else {
            Outcome::Queued(err, placed)
        }
    }
}

/// A round's replies: the tally that decides it, and node by node who granted, who answered (the
/// script ran and said so) and, for an enqueue, the ticket each node gave.
struct Replies {
    tally: Tally,
    enqueue: bool,
    granted: u16,
    answered: u16,
    tickets: [Option<u64>; MAX_NODES],
}

impl Replies {
    fn new(n: usize, enqueue: bool) -> Self {
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
    fn ticket(&self) -> (u64, bool) {
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
    fn shown(&self, ticket: u64) -> Tally {
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

fn bit(index: usize) -> u16 {
    1u16.checked_shl(index as u32).unwrap_or(0)
}

/// A fresh wake-up signal, armed before the round it should follow (a release during the round
/// still wakes the wait after it).
fn armed(
    notify: &Option<Arc<Notify>>,
) -> Option<std::pin::Pin<Box<tokio::sync::futures::OwnedNotified>>> {
    notify.as_ref().map(|n| {
        let mut woken = Box::pin(n.clone().notified_owned());
        woken.as_mut().enable();
        woken
    })
}

/// Waits for a release notification, `pause`, or `end`, whichever comes first.
async fn wait(
    woken: Option<std::pin::Pin<Box<tokio::sync::futures::OwnedNotified>>>,
    pause: Duration,
    end: Instant,
) {
    let until = (Instant::now() + pause).min(end);
    match woken {
        Some(woken) => {
            tokio::select! {
                _ = woken => {}
                _ = tokio::time::sleep_until(until) => {}
            }
        }
        None => tokio::time::sleep_until(until).await,
    }
}

/// Fires `cmd` at the chosen nodes (bit per node; re-sent where it does not land, for one TTL) when
/// dropped armed: the give-up (every node), or a round's unlock (the nodes that may hold its key).
struct Fire<'a> {
    core: &'a Core,
    cmd: Option<Cmd>,
    ttl: Duration,
    nodes: u16,
}

impl Fire<'_> {
    fn disarm(mut self) {
        self.cmd = None;
    }
}

impl Drop for Fire<'_> {
    fn drop(&mut self) {
        let Some(cmd) = self.cmd.take() else { return };
        let until = Instant::now() + self.ttl;
        let all = self.core.nodes();
        if self.nodes & bits(all.len()) == bits(all.len()) {
            self.core.release_retry().fire(all, &cmd, until);
            return;
        }
        let chosen: Vec<_> = (0..all.len())
            .filter(|i| self.nodes & bit(*i) != 0)
            .map(|i| all[i].clone())
            .collect();
        if !chosen.is_empty() {
            self.core.release_retry().fire(&chosen, &cmd, until);
        }
    }
}

/// The mask of the first `n` nodes.
fn bits(n: usize) -> u16 {
    (1u32.checked_shl(n as u32).unwrap_or(0).wrapping_sub(1)) as u16
}
