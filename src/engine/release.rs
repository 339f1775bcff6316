//! Release and extend, for every kind of lock: the owner-checked scripts of the lock's kind, sent to
//! every node in one round; a release may instead hand the lock to a local waiter.

use std::future::Future;
use std::pin::{pin, Pin};
use std::time::Duration;

use tokio::time::Instant;

use super::core::Core;
use super::fanout::{fan_out_into, release_round, Deadline};
use super::waitq::LocalHold;
use crate::algo::quorum::{Tally, Vote};
use crate::algo::verdict::owner_error;
use crate::error::LockError;
use crate::lock::Lock;
use crate::observe::Op;
use crate::protocol::cmd::Cmd;

impl Core {
    /// [`crate::Redlock::release`].
    pub(crate) async fn release(&self, mut lock: Lock) -> Result<(), LockError> {
        let s = self.settings();
        let mut local = lock.take_local();
        // Hand off only with validity to spare: the receiver extends if it needs more.
        let spare = s
            .timing
            .min_validity(lock.ttl())
            .max(s.timing.node_timeout(lock.ttl()));
        if local.as_ref().is_some_and(LocalHold::has_waiters)
            && lock.kind().hands_off()
            && lock.handoffs() < s.max_local_handoffs
            && lock.remaining() >= spare
            && !self.is_closed()
        {
            if let Some(hold) = local.take() {
                hold.hand_off(lock);
                self.leave(hold);
                return Ok(());
            }
        }
        // A release waits its turn (each admitted round ends by its deadline, so the line moves), up to
        // one TTL: by then the keys have expired anyway. Only a majority of nodes frozen with full
        // queues gets there; the release is then handed to the background re-sender, not dropped.
        let _slot = match self.admit(Some(Instant::now() + lock.ttl())).await {
            Ok(slot) => slot,
            Err(overloaded) => {
                self.release_in_background(&lock);
                return Err(overloaded);
            }
        };
        let timeout = self.round_timeout(lock.ttl());
        let started = Instant::now();
        // Past one TTL the keys are gone anyway; until then a node that is answering is waited for.
        let deadline = Deadline::new(started, timeout, started + lock.ttl());
        // A kind whose release can grant our next waiter on the nodes (`Spec::successor`).
        let successor = lock.kind().successor().filter(|_| local.is_none());
        if let Some((successor, claim)) =
            successor.and_then(|s| Some((s, self.claim_successor(&lock)?)))
        {
            let tally = self
                .release_to_successor(&lock, successor, claim, deadline)
                .await;
            self.settle(&lock, &tally, started, &lock.release_cmd(true));
            return verdict(tally, &lock);
        }
        let (cmd, reserves) = self.release_cmd_for(&lock, local.as_ref());
        let mut round = pin!(release_round(self.nodes(), &cmd, deadline));
        // The first poll queues the release on every connection; a local waiter let in after that is
        // written behind it, so its SET finds the key gone — no need to wait for our replies first.
        let early = start(round.as_mut()).await;
        let remote_flag = local.as_ref().map(LocalHold::remote_waiting_flag);
        let yield_to_remote = local.as_ref().is_some_and(LocalHold::remote_waiting);
        if !yield_to_remote {
            if let Some(local) = local.take() {
                self.leave(local);
            }
        }
        let tally = match early {
            Some(tally) => tally,
            None => round.await,
        };
        self.settle(&lock, &tally, started, &cmd);
        if let Some(flag) = remote_flag {
            flag.store(tally.waiters > 0, std::sync::atomic::Ordering::Release);
        }
        if let Some(local) = local {
            // A waiter elsewhere was told of this release; local waiters, already in line, would beat
            // it every time. Give its SET a moment to arrive first (cohort fairness across processes).
            // Not needed where the release reserved the key for that waiter (`protocol::handoff`).
            if !(reserves && tally.waiters > 0) {
                tokio::time::sleep(self.yield_grace(timeout)).await;
            }
            self.leave(local);
        }
        verdict(tally, &lock)
    }

    /// After a release round: its metric, and `cmd` again in the background where it was not
    /// confirmed (the keys expire by themselves at most one TTL from now: the last grant or extend
    /// was before this).
    fn settle(&self, lock: &Lock, tally: &Tally, started: Instant, cmd: &Cmd) {
        self.metrics().round(Op::Release, tally, started.elapsed());
        if !tally.failures.is_empty() {
            let keys_expire = Instant::now() + lock.ttl();
            for (index, cause) in &tally.failures {
                if let Some(node) = self.nodes().get(*index) {
                    self.release_retry().resend(node, cmd, cause, keys_expire);
                }
            }
        }
    }

    /// How long a process that yields to a waiter elsewhere keeps its own waiters out after its
    /// release: time for the release's notification to reach that waiter and the waiter's `SET` to
    /// reach the nodes, about two round trips (the slowest node's bound; a tenth of a node timeout
    /// `timeout` before any was measured). Shorter, our own waiters win the race and the other
    /// process's falls back to its retry pause; longer, the key sits free. Measured at 4 processes x
    /// 16 workers on 4 keys (`results/2026-12-02/contention-grace/sweep.md`): a fixed 2.5 ms gave
    /// 0.6x the cycles/s of 1 ms (two round trips there), 0.5 ms and none a p99.9 of 65-80 ms.
    fn yield_grace(&self, timeout: Duration) -> Duration {
        self.rtt_bound()
            .map_or(timeout / 10, |rtt| rtt * 2)
            .clamp(Duration::from_micros(500), Duration::from_millis(5))
    }

    /// Before the attempt of a waiter a release notification woke: every waiter marked on the key
    /// heard the same release, so each first waits a random part of one round trip (the slowest
    /// node's bound; 1 ms before any was measured; 100 µs to 5 ms), and the first reaches every
    /// node alone instead of all splitting the votes and then sleeping their retry pause. Measured
    /// at 16 processes x 4 workers on 4 keys (`results/2026-12-02/contention-grace/`): 2.6x the
    /// cycles/s, a fifth of the p99.9. A take-over (`named`), woken by its own name, goes at once.
    pub(crate) async fn spread_wake(&self, named: bool) {
        if named {
            return;
        }
        tokio::time::sleep(self.spread()).await;
    }

    /// A random part of one round trip: how far apart waiters aiming at one moment (a release's
    /// wake-up, a holder's expiry) spread their attempts.
    pub(crate) fn spread(&self) -> Duration {
        self.one_round_trip().mul_f64(fastrand::f64())
    }

    /// How long a waiter whose round was granted on some nodes but lost waits before one more try:
    /// a random part of two round trips. Nobody may hold a majority (the votes split three ways),
    /// so no release will wake it.
    pub(crate) fn split_pause(&self) -> Duration {
        (self.one_round_trip() * 2).mul_f64(fastrand::f64())
    }

    /// One round trip for spreading attempts: the slowest node's bound, 1 ms before any was
    /// measured, 100 µs to 5 ms.
    fn one_round_trip(&self) -> Duration {
        self.rtt_bound()
            .unwrap_or(Duration::from_millis(1))
            .clamp(Duration::from_micros(100), Duration::from_millis(5))
    }

    /// Leaves the local queue; a handed-off lock nobody will take is released.
    fn leave(&self, hold: LocalHold<Lock>) {
        if let Some(orphan) = hold.leave() {
            self.release_in_background(&orphan);
        }
    }

    /// [`crate::Redlock::extend`].
    pub(crate) async fn extend(&self, lock: &mut Lock, ttl: Duration) -> Result<(), LockError> {
        let ttl = self.check_ttl(ttl)?;
        if Instant::now() >= lock.valid_until() {
            return Err(LockError::AlreadyExpired);
        }
        // Waiting past the validity would be pointless: nothing could extend the lock after it.
        let _slot = self.admit(Some(lock.valid_until())).await?;
        let jumps_at = lock.jumps_now();
        let start = Instant::now();
        if start >= lock.valid_until() {
            return Err(LockError::AlreadyExpired);
        }
        let cmd = lock.extend_cmd(ttl);
        // Replies after the current validity ended prove nothing: someone else may hold it by then.
        let deadline = self.round_deadline(start, ttl, Some(lock.valid_until()));
        let quorum = lock.kind().tally(self.nodes().len());
        let tally =
            fan_out_into(self.nodes(), &cmd, deadline, Vote::of_script, quorum, false).await;
        self.metrics().round(Op::Extend, &tally, start.elapsed());
        lock.settle_extend(&self.settings().timing, ttl, (start, jumps_at), tally)
    }

    /// Releases `lock` without waiting, as a guard's drop does: the owner-checked release (with the
    /// notification when configured) queued on every node now, copies that do not land re-sent in
    /// the background. Its place in the local queue is left after that, so a local waiter's `SET`
    /// is written behind the release on every connection and finds the key gone. Needs no runtime.
    pub(crate) fn release_on_drop(&self, mut lock: Lock) {
        let local = lock.take_local();
        let (cmd, _) = self.release_cmd_for(&lock, local.as_ref());
        self.release_retry()
            .fire(self.nodes(), &cmd, Instant::now() + lock.ttl());
        if let Some(hold) = local {
            self.leave(hold);
        }
    }

    /// Queues `lock`'s release on every node without waiting (and without a notification); copies
    /// that do not land are sent again until the keys have expired (see `release_retry`).
    pub(crate) fn release_in_background(&self, lock: &Lock) {
        self.release_retry().fire(
            self.nodes(),
            &lock.release_cmd(false),
            Instant::now() + lock.ttl(),
        );
    }
}

/// The release rule (a majority can no longer hold our value, and at least one delete happened) is
/// the release tally's own (`Tally::for_release`).
fn verdict(tally: Tally, lock: &Lock) -> Result<(), LockError> {
    if tally.won() {
        Ok(())
    } else {
        Err(owner_error(tally, lock.held()))
    }
}

/// Polls `fut` once: a fan-out queues its commands on every node in its first poll. Returns the output
/// if it already finished. Used to queue a release, let a local waiter in, then await the replies.
async fn start<F: Future>(mut fut: Pin<&mut F>) -> Option<F::Output> {
    std::future::poll_fn(|cx| match fut.as_mut().poll(cx) {
        std::task::Poll::Ready(out) => std::task::Poll::Ready(Some(out)),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}

/// Owns a lock held on the nodes while more work is done with it; releases it in the background if
/// dropped before [`keep`](Self::keep) (an early return, or the caller's future being dropped).
pub(crate) struct HeldGuard<'a> {
    core: &'a Core,
    lock: Option<Lock>,
}

impl<'a> HeldGuard<'a> {
    pub(crate) fn new(core: &'a Core, lock: Lock) -> Self {
        Self {
            core,
            lock: Some(lock),
        }
    }

    pub(crate) fn lock_mut(&mut self) -> &mut Lock {
        self.lock.as_mut().expect("held until kept")
    }

    pub(crate) fn keep(mut self) -> Lock {
        self.lock.take().expect("held until kept")
    }
}

impl Drop for HeldGuard<'_> {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            self.core.release_in_background(&lock);
        }
    }
}
