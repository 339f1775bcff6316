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
        take_over: Option<TakeOver>,
    ) -> Result<Lock, (LockError, bool)> {
        if self.is_closed() {
            // Shut down while this call waited: it ends here (not retryable).
            return Err((LockError::Closed, false));
        }
        let code = target.kind.spec().code;
        let value = LockValue::tagged(self.tag(), code)
            .map_err(|e| (LockError::Random(e.to_string()), false))?;
        // Before the clock starts: time spent waiting here is this process's queue, not the nodes'.
        let _slot = self.admit(admit_until).await.map_err(|e| (e, false))?;
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
            Some(t) => (t.cmd(target, value, ttl), take_over_vote as fn(_) -> _),
            None => self.acquire_cmd(target, value, ttl),
        };
        let deadline = self.round_deadline(start, ttl, None);
        let quorum = target.kind.tally(self.nodes().len());
        let tally = fan_out_into(self.nodes(), &cmd, deadline, vote, quorum).await;
        // One clock read serves the metric and the validity (a read is most of what observing costs).
        let elapsed = start.elapsed();
        self.metrics().round(Op::Acquire, &tally, elapsed);
        if !tally.won() {
            // A node that answered "taken" wrote nothing of ours (every kind's acquire refuses
            // whole, and the command is never sent again): its release could only find nothing.
            // A node that said yes, failed or has not answered yet still gets it.
            guard.refused = tally.taken_mask;
            let partial = tally.yes > 0;
            return Err((acquire_error(tally), partial));
        }
        // A take-over's grants name the next waiter (see `protocol::handoff`).
        let next_waiter = if take_over.is_some() {
            tally.max_counter
        } else {
            0
        };
        let lock = self
            .won_lock(target, value, ttl, (start, elapsed), tally, jumps)
            .map_err(|e| (e, false))?;
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

/// Fires the release script at every node when dropped while armed; never waits for replies (the
/// engine's release re-sender does, and sends again where a copy did not land).
struct ReleaseOnDrop<'a> {
    core: &'a Core,
    target: &'a Target,
    value: LockValue,
    ttl: Duration,
    armed: bool,
    /// A lost take-over steps back where it set the key (see `TakeOver::step_back_cmd`).
    take_over: Option<TakeOver>,
    /// The nodes that answered "taken" (bit = node index): nothing of ours to release there.
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
            let cmd = match &self.take_over {
                Some(t) => t.step_back_cmd(self.core, self.target, self.value, self.ttl),
                None => self
                    .target
                    .kind
                    .release_cmd(&self.target.keys, self.value, false),
            };
            // Keys this attempt set expire within one TTL of now (the SET was sent before now).
            let until = Instant::now() + self.ttl;
            self.core
                .release_retry()
                .fire_except(self.core.nodes(), self.refused, &cmd, until);
        }
    }
}
