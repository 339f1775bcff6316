//! Whether a lock is still held, asked of the nodes ([`Core::is_held`]) or waited on
//! ([`Core::lost`]): what a holder that does not renew learns of a forced release, an evicted key,
//! a failed-over node, a clock jump or its engine's shutdown.
//!
//! A lock is lost, for [`Core::lost`], when the first of these happens: its validity ends (a timer
//! at `valid_until`, which an extend moves), the nodes that granted it jump forward until they are
//! no longer its quorum (the clock guard's log), its engine shuts down, or a check of the nodes
//! ([`Core::is_held`]) finds it gone. Each of these wakes the waiting futures, which then read the
//! lock's own state: nothing polls the nodes on its own.

use std::time::Duration;

use tokio::time::Instant;

use super::core::Core;
use super::fanout::fan_out_into;
use crate::algo::clock::JumpLog;
use crate::algo::quorum::{Tally, Vote};
use crate::error::LockError;
use crate::lock::Lock;
use crate::observe::Op;
use crate::protocol::cmd::Cmd;

/// What a check of one lock needs, read from it at once (a renewed lock's sits behind a mutex
/// that an await must not hold).
pub(crate) struct HeldCheck {
    cmd: Cmd,
    quorum: Tally,
    ttl: Duration,
    valid_until: Instant,
}

impl HeldCheck {
    /// The check of `lock` on a set of `nodes` nodes.
    pub(crate) fn of(lock: &Lock, nodes: usize) -> Self {
        Self {
            cmd: lock.holds_cmd(),
            quorum: lock.kind().tally(nodes),
            ttl: lock.ttl(),
            valid_until: lock.valid_until(),
        }
    }
}

/// What a check round found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The quorum confirmed it within its validity.
    Held,
    /// Enough nodes said "not ours" (gone, or another owner's) that no quorum can hold it.
    Refused,
    /// Its validity ended before the answer: not held, whatever the nodes said.
    Expired,
}

impl Core {
    /// Asks every node whether `lock` is still ours, changing nothing (its kind's `holds` script):
    /// `Ok(true)` when its quorum confirms it before its validity ends, `Ok(false)` when it is not
    /// valid any more or the answers rule a quorum out (forced release, eviction, expiry, another
    /// owner); then the lock stays lost ([`Lock::is_valid`] false, [`Core::lost`] wakes).
    ///
    /// # Errors
    /// Too few nodes answered to tell ([`LockError::QuorumNotReached`]); [`LockError::Closed`]
    /// after a shutdown is not an error here: the lock is simply not held.
    pub(crate) async fn is_held(&self, lock: &Lock) -> Result<bool, LockError> {
        if !lock.is_valid() {
            return Ok(false);
        }
        match self
            .ask_held(HeldCheck::of(lock, self.nodes().len()))
            .await?
        {
            Answer::Held => Ok(lock.is_valid()),
            // Its validity ended meanwhile: `lost` says so by itself (`Lost`), nothing to record.
            Answer::Expired => Ok(false),
            Answer::Refused => {
                lock.mark_gone();
                self.lost_news.notify_waiters();
                Ok(false)
            }
        }
    }

    /// One check round (see [`is_held`](Self::is_held)); the caller records a refusal.
    pub(crate) async fn ask_held(&self, check: HeldCheck) -> Result<Answer, LockError> {
        // A turn not given before the validity ends: no need to ask.
        let Ok(_slot) = self.admit(Some(check.valid_until)).await else {
            return Ok(Answer::Expired);
        };
        let start = Instant::now();
        let deadline = self.round_deadline(start, check.ttl, Some(check.valid_until));
        let tally = fan_out_into(
            self.nodes(),
            &check.cmd,
            deadline,
            Vote::of_script,
            check.quorum,
            false,
        )
        .await;
        self.metrics().round(Op::Check, &tally, start.elapsed());
        if tally.won() {
            return Ok(match Instant::now() < check.valid_until {
                true => Answer::Held,
                false => Answer::Expired,
            });
        }
        // Lost: refused only when the nodes that said "not ours" alone rule a quorum out. The
        // round stops as soon as a win is impossible, so nodes that failed or had not answered
        // yet could still be holding it: then nobody can tell.
        if tally.taken + tally.gone > tally.nodes - tally.quorum() {
            return Ok(Answer::Refused);
        }
        Err(LockError::QuorumNotReached {
            ok: tally.yes,
            needed: tally.quorum(),
            failures: tally.failures,
        })
    }

    /// Waits until `lock` is lost (see the module doc) and says why: [`LockError::Lost`] (its
    /// validity ended, or nodes of its quorum had their clocks jump), [`LockError::NotOwner`] (the
    /// nodes said so), or [`LockError::Closed`] (the engine was shut down).
    pub(crate) async fn lost(&self, lock: &Lock) -> LockError {
        // Never woken: what a lock waits on for jumps with the clock guard off.
        let quiet = tokio::sync::Notify::new();
        let jump_news = self.jumps.as_deref().map_or(&quiet, JumpLog::news);
        loop {
            // Armed before the state is read: news that comes in between still wakes us.
            let news = self.lost_news.notified();
            let jumps = jump_news.notified();
            tokio::pin!(news, jumps);
            news.as_mut().enable();
            jumps.as_mut().enable();
            if let Some(why) = self.why_lost(lock) {
                return why;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(lock.valid_until()) => {}
                _ = news => {}
                _ = jumps => {}
            }
        }
    }

    /// Why `lock` is no longer held, or `None` while it is.
    fn why_lost(&self, lock: &Lock) -> Option<LockError> {
        if self.is_closed() {
            Some(LockError::Closed)
        } else if lock.is_gone() {
            Some(LockError::NotOwner)
        } else if !lock.is_valid() {
            Some(LockError::Lost)
        } else {
            None
        }
    }
}
