//! One attempt round, for every lock kind: admission, a fresh value, the fan-out, the validity
//! from the monotonic start; on a lost round (or a dropped future) the value is released on every
//! node, or a lost take-over steps back (`super::takeover`).

use std::time::Duration;

use tokio::time::Instant;

use super::core::Core;
use super::fanout::fan_out_into;
use super::takeover::TakeOver;
use crate::algo::clock::JumpMark;
use crate::algo::quorum::Tally;
use crate::algo::value::LockValue;
use crate::algo::verdict::acquire_error;
use crate::error::LockError;
use crate::lock::{Grant, Lock};
use crate::observe::Op;
use crate::protocol::handoff::take_over_vote;
use crate::protocol::spec::Target;

impl Core {
    /// One attempt: waits for admission until `admit_until`, then one round.
    pub(super) async fn attempt(
        &self,
        target: &Target,
        ttl: Duration,
        admit_until: Option<Instant>,
        take_over: Option<&TakeOver>,
    ) -> Result<Lock, Lost> {
        if self.is_closed() {
            // Shut down while this call waited: it ends here (not retryable).
            return Err(Lost::before_sending(LockError::Closed));
        }
        // A take-over attempts with its wait's value (its entry in the lists, which a release may
        // grant); any other attempt with a fresh one.
        let value = match take_over {
            Some(t) => t.value(),
            None => LockValue::tagged(self.tag(), target.kind.spec().code)
                .map_err(|e| Lost::before_sending(LockError::Random(e.to_string())))?,
        };
        // Before the clock starts: time spent waiting here is this process's queue, not the nodes'.
        let _slot = (self.admit(admit_until).await).map_err(Lost::before_sending)?;
        let jumps = self.jump_mark();
        let start = Instant::now();
        // Armed until the lock is handed out: on failure, or if this future is dropped mid-round, it
        // releases on every node (also those that said no or timed out: their command may still land).
        let mut guard = ReleaseOnDrop {
            core: self,
            target,
            value,
            ttl,
            armed: true,
            take_over,
            refused: 0,
        };
        let (cmd, vote) = match take_over {
            Some(t) => (t.cmd(target), take_over_vote as fn(_) -> _),
            None => self.acquire_cmd(target, value, ttl),
        };
        let deadline = self.round_deadline(start, ttl, None);
        let quorum = target.kind.tally(self.nodes().len());
        // A lost take-over waits for every reply: its step back goes only where it may have set.
        let until_won = take_over.is_some();
        let tally = fan_out_into(self.nodes(), &cmd, deadline, vote, quorum, until_won).await;
        // One clock read serves the metric and the validity (a read is most of what observing costs).
        let elapsed = start.elapsed();
        self.metrics().round(Op::Acquire, &tally, elapsed);
        if !tally.won() {
            // A node that answered "taken" wrote nothing of ours (every kind's acquire refuses
            // whole, and the command is never sent again): its release could only find nothing.
            // A node that said yes, failed or has not answered yet still gets it.
            // A take-over's step back goes only where the round set our value (it said yes): a
            // node that failed or never answered keeps whatever our command does there — our own
            // value, which our next round refreshes, and the wait's end releases (a give-up on
            // every node, a win that stepped back where the node does not count for its lock) — so a
            // node that is down or frozen costs the wait no change of value.
            guard.refused = match take_over {
                Some(_) => !tally.yes_mask,
                None => tally.taken_mask,
            };
            let partial = tally.yes > 0;
            let stepped_back = take_over.is_some() && tally.yes_mask != 0;
            return Err(Lost {
                err: acquire_error(tally),
                partial,
                stepped_back,
            });
        }
        // A take-over's grants name the next waiter (see `protocol::handoff`).
        let next_waiter = if take_over.is_some() {
            tally.max_counter
        } else {
            0
        };
        let lock = self
            .won_lock(target, value, ttl, (start, elapsed), tally, jumps)
            .map_err(|err| Lost {
                err,
                partial: false,
                stepped_back: take_over.is_some(),
            })?;
        guard.disarm();
        Ok(lock.waited_on_by(next_waiter))
    }

    /// The lock a won round of `target` grants `value`: its validity counts from the round's
    /// `start` (taken before any of its commands could reach a node), `elapsed` being how long the
    /// round took; refused with [`LockError::ValidityExpired`] below the minimum. Every kind's
    /// grant goes through here: the attempt loop's, the fair lock's, a release's to its successor.
    pub(crate) fn won_lock(
        &self,
        target: &Target,
        value: LockValue,
        ttl: Duration,
        (start, elapsed): (Instant, Duration),
        tally: Tally,
        jumps: JumpMark,
    ) -> Result<Lock, LockError> {
        let s = self.settings();
        let min = s.timing.min_validity(ttl);
        match s.timing.validity(ttl, elapsed) {
            Some(validity) if validity >= min => {
                let grant = Grant {
                    held: crate::observe::Held::new(
                        &self.metrics().gauges.held,
                        target.kind.release_cmd(&target.keys, value, false),
                    ),
                    prefix_len: s.key_prefix.len(),
                    key_format: s.key_format,
                    value,
                    ttl,
                    valid_until: start + elapsed + validity,
                    tally,
                    jumps,
                };
                let lock = Lock::granted(target, grant);
                // Registered first (above), checked after: a shutdown that begins before this
                // check refuses the lock (the caller releases the keys); one that begins after it
                // finds the lock registered and releases it.
                if self.is_closed() {
                    return Err(LockError::Closed);
                }
                Ok(lock)
            }
            left => Err(LockError::ValidityExpired {
                left: left.unwrap_or_default(),
                min,
            }),
        }
    }
}

/// A lost attempt: why; whether some node granted it (the votes may have split); whether a
/// take-over's step back went to some node (it may have deleted a grant of the wait's entry there,
/// whose message may still be on its way: the waiter moves to its entry's next epoch).
pub(super) struct Lost {
    pub(super) err: LockError,
    pub(super) partial: bool,
    pub(super) stepped_back: bool,
}

impl Lost {
    /// Lost before anything was sent.
    fn before_sending(err: LockError) -> Self {
        Self {
            err,
            partial: false,
            stepped_back: false,
        }
    }
}

/// Fires the release script at every node when dropped while armed; never waits for replies (the
/// engine's release re-sender does, and sends again where a copy did not land).
struct ReleaseOnDrop<'a> {
    core: &'a Core,
    target: &'a Target,
    value: LockValue,
    ttl: Duration,
    armed: bool,
    /// A lost take-over steps back where it set the key (see `TakeOver::step_back_cmd`).
    take_over: Option<&'a TakeOver>,
    /// Where not to send it (bit = node index): the nodes that answered "taken" (nothing of ours
    /// to release there), or for a take-over every node that did not say yes.
    refused: u16,
}

impl ReleaseOnDrop<'_> {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for ReleaseOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            // Queued now; each connection writes it after this attempt's command, so it cannot
            // overtake it. No notification: a failed attempt freed nothing anyone waits for.
            if let Some(t) = &self.take_over {
                // Sent once: the wait then takes a fresh value (`TakeOver::stepped_back`), and what
                // the step back misses is the wait's end's to release (its give-up) or expires.
                let cmd = t.step_back_cmd(self.core, self.target, self.ttl);
                let nodes: Vec<_> = (self.core.nodes().iter().enumerate())
                    .filter(|(i, _)| self.refused & (1 << i) == 0)
                    .map(|(_, node)| node.clone())
                    .collect();
                return super::fanout::fire(&nodes, &cmd);
            }
            let cmd = self
                .target
                .kind
                .release_cmd(&self.target.keys, self.value, false);
            // Keys this attempt set expire within one TTL of now (the SET was sent before now).
            let until = Instant::now() + self.ttl;
            self.core
                .release_retry()
                .fire_except(self.core.nodes(), self.refused, &cmd, until);
        }
    }
}
