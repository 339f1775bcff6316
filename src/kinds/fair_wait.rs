//! The fair lock's waiting loop (its protocol and argument are in `kinds::fair`): ticket round,
//! enqueue round, then attempts at each release notification or retry pause, until granted on a
//! majority with enough validity, or the wait ends and the waiter gives its place up.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::fair::{
    attempt_cmd, enqueue_cmd, grant_vote, leave_cmd, ticket_cmd, ticket_vote, unlock_cmd, wake_name,
};
use crate::algo::quorum::{quorum, Tally};
use crate::algo::retry::Wait;
use crate::algo::timing::millis;
use crate::algo::value::LockValue;
use crate::algo::verdict::acquire_error;
use crate::engine::core::Core;
use crate::engine::fanout::{fan_out_into, round};
use crate::error::LockError;
use crate::lock::{Grant, Lock};
use crate::observe::Op;
use crate::protocol::cmd::Cmd;
use crate::protocol::spec::Target;

/// What one enqueue or attempt round came to.
enum Outcome {
    /// Granted on a majority with enough validity.
    Granted(Lock),
    /// Still queued on enough nodes; wait for the next turn.
    Queued(LockError),
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
        // One try: the enqueue and its first attempt (two rounds), each within a round's deadline.
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
        let leave = Leave {
            core: self.core,
            cmd: Some(leave_cmd(&target.keys, value)),
            ttl,
        };
        let key = &target.keys.as_slice()[0];
        // Woken only by messages naming us (we are a node's new head) or naming nobody; the
        // keepalive pause is the safety net for lost ones.
        let subscription = s
            .notify_releases
            .then(|| self.core.notifier().subscribe_named(key, wake_name(value)));
        let notify = subscription.as_ref().map(|sub| sub.notify());
        // Attempts are also the waiter's keepalive: at most a quarter TTL apart.
        let pause = || s.retry.next_delay().min(ttl / 4);
        let mut attempts = 0u32;
        let mut last_err = None;
        'enqueue: while Instant::now() < end {
            let woken = armed(&notify);
            let ticket = match self.ticket(&target, ttl, end).await {
                Ok(ticket) => ticket,
                Err(err) => {
                    last_err = Some(err);
                    wait(woken, pause(), end).await;
                    continue;
                }
            };
            let mut cmd = enqueue_cmd(&target.keys, value, millis(ttl), ticket);
            loop {
                attempts += 1;
                let woken = armed(&notify);
                match self.fair_round(&target, &cmd, value, ttl, end).await {
                    Outcome::Granted(mut lock) => {
                        lock.set_attempts(attempts);
                        leave.disarm();
                        return Ok(lock);
                    }
                    Outcome::Queued(err) => last_err = Some(err),
                    Outcome::Requeue(err) => {
                        // Out of every queue first, so no stale entry of ours blocks anyone.
                        self.core.release_retry().fire(
                            self.core.nodes(),
                            &leave_cmd(&target.keys, value),
                            Instant::now() + ttl,
                        );
                        last_err = Some(err);
                        wait(woken, pause(), end).await;
                        continue 'enqueue;
                    }
                }
                if Instant::now() >= end {
                    break 'enqueue;
                }
                wait(woken, pause(), end).await;
                cmd = attempt_cmd(&target.keys, value, millis(ttl), ticket);
            }
        }
        drop(leave);
        Err(match last_err {
            Some(LockError::QuorumNotReached {
                ok,
                needed,
                failures,
            }) if attempts == 0 => LockError::QuorumNotReached {
                ok,
                needed,
                failures,
            },
            other => LockError::Timeout {
                attempts,
                last: other.map(Box::new),
            },
        })
    }

    /// The ticket round: the highest live ticket a majority reports, plus one.
    async fn ticket(&self, target: &Target, ttl: Duration, end: Instant) -> Result<u64, LockError> {
        let _slot = self.core.admit(Some(end)).await?;
        let start = Instant::now();
        let deadline = self.core.round_deadline(start, ttl, None);
        // The first majority will do: it meets the majority of every enqueue that has completed,
        // and a slow node then costs nothing.
        let tally = round(
            self.core.nodes(),
            &ticket_cmd(&target.keys),
            deadline,
            ticket_vote,
            true,
        )
        .await;
        if tally.yes < quorum(self.core.nodes().len()) {
            return Err(acquire_error(tally));
        }
        Ok(tally.max_counter.saturating_add(1))
    }

    /// One enqueue or attempt round: granted, still queued, or to start over.
    async fn fair_round(
        &self,
        target: &Target,
        cmd: &Cmd,
        value: LockValue,
        ttl: Duration,
        end: Instant,
    ) -> Outcome {
        let s = self.core.settings();
        let Ok(_slot) = self.core.admit(Some(end)).await else {
            return Outcome::Queued(LockError::Timeout {
                attempts: 0,
                last: None,
            });
        };
        let jumps = self.core.jump_mark();
        let start = Instant::now();
        // Keys of ours this round set are released unless the lock is handed out (the place kept).
        let unlock = Unlock {
            core: self.core,
            cmd: Some(unlock_cmd(&target.keys, value)),
            ttl,
        };
        let deadline = self.core.round_deadline(start, ttl, None);
        let n = self.core.nodes().len();
        let enqueue = matches!(cmd, Cmd::Script { script, .. } if std::ptr::eq(*script, &super::fair::ENQUEUE));
        // An enqueue waits for every answer: whether it completed (landed on a majority) matters
        // beyond the grant.
        let tally = if enqueue {
            round(self.core.nodes(), cmd, deadline, grant_vote, false).await
        } else {
            fan_out_into(self.core.nodes(), cmd, deadline, grant_vote, Tally::new(n)).await
        };
        let elapsed = start.elapsed();
        self.core.metrics().round(Op::Acquire, &tally, elapsed);
        let queued_on = tally.yes + tally.taken;
        if tally.won() {
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
            return Outcome::Queued(LockError::ValidityExpired {
                left: s.timing.validity(ttl, elapsed).unwrap_or_default(),
                min,
            });
        }
        // Missing from so many queues that no majority can grant us: our place is gone.
        let missing = if enqueue { n - queued_on } else { tally.gone };
        let err = acquire_error(tally);
        if missing > n - quorum(n) {
            Outcome::Requeue(err)
        } else {
            Outcome::Queued(err)
        }
    }
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

/// Fires `cmd` at every node (re-sent where it does not land, for one TTL) when dropped armed.
struct Leave<'a> {
    core: &'a Core,
    cmd: Option<Cmd>,
    ttl: Duration,
}

impl Leave<'_> {
    fn disarm(mut self) {
        self.cmd = None;
    }
}

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        if let Some(cmd) = self.cmd.take() {
            let until = Instant::now() + self.ttl;
            self.core
                .release_retry()
                .fire(self.core.nodes(), &cmd, until);
        }
    }
}

/// The same, for a round's keys (compare-and-delete only: the waiter keeps its place).
type Unlock<'a> = Leave<'a>;
