//! The fair lock's waiting loop (its protocol and argument are in `kinds::fair`): the enqueue round,
//! the agree round when the nodes' tickets disagreed, then attempts at each release notification or
//! retry pause, until granted on a majority with enough validity, or the wait ends and the waiter
//! gives its place up.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::replies::{bit, Replies};
use super::spec::{attempt_cmd, enqueue_cmd, leave_cmd, unlock_cmd, wake_channel, wake_name};
use crate::algo::quorum::quorum;
use crate::algo::retry::Wait;
use crate::algo::timing::millis;
use crate::algo::value::LockValue;
use crate::algo::verdict::acquire_error;
use crate::engine::core::Core;
use crate::engine::fanout::run;
use crate::engine::parked::Handed;
use crate::engine::successors::Registration;
use crate::error::LockError;
use crate::lock::Lock;
use crate::observe::Op;
use crate::protocol::cmd::Cmd;
use crate::protocol::spec::Target;
use crate::transport::NodeClient;

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
            resend: true,
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
        // Rounds in a row lost for another reason than the queue: an outage ends a wait until
        // acquired (`Wait::outage_over`).
        let mut outage = 0u32;
        let enqueue = enqueue_cmd(&target.keys, value, millis(ttl));
        'enqueue: while Instant::now() < end {
            if self.core.is_closed() {
                // Shut down while waiting: the place is given up (`leave`) and no lock handed out.
                return Err(LockError::Closed);
            }
            attempts += 1;
            let mut woken = armed(&notify);
            let (attempt, mut at_once, parked) = match self
                .round(&target, (Round::Enqueue, &enqueue), value, ttl, end)
                .await
            {
                Outcome::Granted(lock) => return Ok(granted(lock, attempts, leave)),
                Outcome::Queued(err, None) => {
                    // Admission refused: the enqueue was not sent.
                    last_err = Some(err);
                    wait(&mut woken, (Instant::now() + pause()).min(end), None).await;
                    continue;
                }
                Outcome::Queued(err, Some((ticket, complete))) => {
                    last_err = Some(err);
                    placed_once = true;
                    // Parked between rounds from now on: a release by this engine may grant it
                    // then (`crate::engine::successors`); it starts no round until that release
                    // has answered.
                    let parked = self.core.park(&target, value, ticket, ttl);
                    // The agree round goes at once: the enqueue completes with it.
                    let attempt = attempt_cmd(&target.keys, value, millis(ttl), ticket);
                    (attempt, !complete, parked)
                }
                Outcome::Requeue(err) => {
                    let err = self.requeue(&target, value, err, (patience, &mut outage))?;
                    last_err = Some(err);
                    wait(&mut woken, (Instant::now() + pause()).min(end), None).await;
                    continue;
                }
            };
            outage = 0;
            loop {
                if Instant::now() >= end {
                    break 'enqueue;
                }
                // The keepalive's due time holds however often a release's answer wakes us.
                let until = (Instant::now() + pause()).min(end);
                let min_validity = s.timing.min_validity(ttl);
                loop {
                    // Only a claim's answer may send us back to waiting: a wake-up or the keepalive
                    // is acted on whatever the answer (a wake-up is not heard twice).
                    let mut answered = false;
                    if !at_once {
                        parked.rest();
                        // The armed wake-up survives an answer: kept armed across `Stay`.
                        answered = wait(&mut woken, until, Some(&parked)).await;
                    }
                    at_once = false;
                    // A release that named us answers first: the lock, an attempt at once, or
                    // (it granted us nowhere) back to waiting.
                    match tokio::time::timeout_at(end, parked.resume()).await {
                        // Checked again here: this task may run well after the release answered.
                        Ok(Some(Handed::Lock(lock))) if lock.remaining() >= min_validity => {
                            return Ok(granted(*lock, attempts, leave));
                        }
                        // Too little left: our attempt, at once, refreshes the key we hold.
                        Ok(Some(Handed::Lock(_))) => break,
                        Ok(Some(Handed::Stay)) if answered && Instant::now() < until => {}
                        Ok(_) => break,
                        Err(_) => break 'enqueue,
                    }
                }
                if self.core.is_closed() {
                    return Err(LockError::Closed);
                }
                attempts += 1;
                woken = armed(&notify);
                match self
                    .round(&target, (Round::Attempt, &attempt), value, ttl, end)
                    .await
                {
                    Outcome::Granted(lock) => return Ok(granted(lock, attempts, leave)),
                    Outcome::Queued(err, _) => {
                        // Nodes down after the enqueue: attempts keep coming back "queued" with
                        // their failures, and an outage must end the wait here too.
                        if patience.outage_over(&mut outage, &err, s.retry.count) {
                            return Err(err);
                        }
                        last_err = Some(err);
                    }
                    Outcome::Requeue(err) => {
                        let err = self.requeue(&target, value, err, (patience, &mut outage))?;
                        last_err = Some(err);
                        wait(&mut woken, (Instant::now() + pause()).min(end), None).await;
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

    /// Out of every queue before a new enqueue, so no stale entry of ours blocks anyone. Sent once,
    /// ahead of the new enqueue on each connection: a copy re-sent later could land after the new
    /// place's grant (same value) and delete it, leaving our lock a node short (with 5 nodes and a
    /// bare majority, another waiter could then win). Where it does not land, the enqueue replaces
    /// the stale entry, or the entry expires.
    ///
    /// The place was lost with `err`: that error back to keep as the last one, or as the wait's end
    /// (`Err`) when it is one more loss of an outage that ends the wait (`Wait::outage_over`).
    fn requeue(
        &self,
        target: &Target,
        value: LockValue,
        err: LockError,
        (patience, outage): (Wait, &mut u32),
    ) -> Result<LockError, LockError> {
        crate::engine::fanout::fire(self.core.nodes(), &leave_cmd(&target.keys, value));
        match patience.outage_over(outage, &err, self.core.settings().retry.count) {
            true => Err(err),
            false => Ok(err),
        }
    }

    /// One enqueue (`Round::Enqueue`, which waits for every answer) or attempt round: granted,
    /// still queued, or to start over.
    async fn round(
        &self,
        target: &Target,
        (round, cmd): (Round, &Cmd),
        value: LockValue,
        ttl: Duration,
        end: Instant,
    ) -> Outcome {
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
            // Sent once, on each connection behind the round: a copy re-sent later (on a new
            // connection) could land after a later grant of this same value — by our next round or
            // a release that names us (`crate::engine::successors`) — and delete it. A key it
            // misses is our next round's to clean (it deletes our key where we are not the head),
            // or our give-up's, or it expires.
            resend: false,
        };
        let deadline = self.core.round_deadline(start, ttl, None);
        let n = self.core.nodes().len();
        let enqueue = round == Round::Enqueue;
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
            let lock = self
                .core
                .won_lock(target, value, ttl, (start, elapsed), tally, jumps);
            return match lock {
                Ok(lock) => {
                    unlock.disarm();
                    Outcome::Granted(lock)
                }
                Err(err) => Outcome::Queued(err, placed),
            };
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

/// The wait's end with `lock`: the attempts it took counted in it, and no give-up sent (`leave`
/// disarmed: the place became the lock).
fn granted(mut lock: Lock, attempts: u32, leave: Fire<'_>) -> Lock {
    lock.set_attempts(attempts);
    leave.disarm();
    lock
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

/// Waits for a release notification (the armed `woken`, taken once it fires), a release's answer
/// to a claim on `parked`, or `until`, whichever comes first; true when it was the answer alone.
async fn wait(
    woken: &mut Option<std::pin::Pin<Box<tokio::sync::futures::OwnedNotified>>>,
    until: Instant,
    parked: Option<&Registration<'_>>,
) -> bool {
    let armed = woken.as_mut();
    let heard = async {
        match armed {
            Some(w) => w.as_mut().await,
            None => std::future::pending().await,
        }
    };
    let answered = async {
        match parked {
            Some(parked) => parked.answered().await,
            None => std::future::pending().await,
        }
    };
    let answer = tokio::select! {
        biased;
        _ = heard => None,
        _ = tokio::time::sleep_until(until) => Some(false),
        _ = answered => Some(true),
    };
    match answer {
        // Heard: a spent wake-up is not polled again.
        None => {
            *woken = None;
            false
        }
        Some(alone) => alone,
    }
}

/// Fires `cmd` at the chosen nodes (bit per node; with `resend`, re-sent where it does not land, for
/// one TTL) when dropped armed: the give-up (every node), or a round's unlock (the nodes that may
/// hold its key).
struct Fire<'a> {
    core: &'a Core,
    cmd: Option<Cmd>,
    ttl: Duration,
    nodes: u16,
    resend: bool,
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
        let send = |nodes: &[Arc<dyn NodeClient>]| match self.resend {
            true => self.core.release_retry().fire(nodes, &cmd, until),
            false => crate::engine::fanout::fire(nodes, &cmd),
        };
        if self.nodes & bits(all.len()) == bits(all.len()) {
            return send(all);
        }
        let chosen: Vec<_> = (0..all.len())
            .filter(|i| self.nodes & bit(*i) != 0)
            .map(|i| all[i].clone())
            .collect();
        if !chosen.is_empty() {
            send(&chosen);
        }
    }
}

/// The mask of the first `n` nodes.
fn bits(n: usize) -> u16 {
    (1u32.checked_shl(n as u32).unwrap_or(0).wrapping_sub(1)) as u16
}

/// Which of the fair lock's rounds a command is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Round {
    /// Takes a place (and tries): waits for every answer, its ticket is the highest of them.
    Enqueue,
    /// Tries from the place taken.
    Attempt,
}
