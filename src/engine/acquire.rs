//! The attempt loop every lock kind shares: local queue, attempts, random pauses cut short by release
//! notifications, and taking over a lock handed off by the previous local holder.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::core::Core;
use super::fanout::{fire, Deadline};
use super::release::HeldGuard;
use super::takeover::TakeOver;
use super::waitq::LocalHold;
use crate::algo::quorum::Vote;
use crate::algo::retry::Wait;
use crate::algo::timing::millis;
use crate::algo::value::LockValue;
use crate::error::LockError;
use crate::lock::Lock;
use crate::protocol::cmd::script_cmd;
use crate::protocol::cmd::{Args, Cmd, Keys};
use crate::protocol::scripts::MARK_WAITING;
use crate::protocol::spec::Target;
use crate::transport::subscriber::Subscription;
use crate::transport::NodeClient;

impl Core {
    /// Acquires `target`, waiting as `wait` says: its turn in the local queue and retries, or with
    /// [`Wait::Once`] exactly one attempt (failing at once if a local task holds it). A call that
    /// gives up to another owner says who and for how long (`super::busy`: one more round).
    pub(crate) async fn acquire(
        &self,
        target: Target,
        ttl: Duration,
        wait: Wait,
    ) -> Result<Lock, LockError> {
        match self
            .acquire_since(target.clone(), ttl, wait, Instant::now())
            .await
        {
            Err(err) => Err(self.busy(&target, ttl, err).await),
            granted => granted,
        }
    }

    /// [`acquire`](Self::acquire) for a caller that began waiting at `began` (the semaphore's local
    /// gate): the acquire timeout counts from there, not from now, so gate and attempts share it.
    pub(crate) async fn acquire_since(
        &self,
        target: Target,
        ttl: Duration,
        wait: Wait,
        began: Instant,
    ) -> Result<Lock, LockError> {
        let s = self.settings();
        let ttl = self.check_ttl(ttl)?;
        let deadline = wait.deadline(began, s.acquire_timeout);
        let hold = self.enter_local(&target, ttl, wait, deadline).await?;
        if let Some(local) = hold.as_ref() {
            if let Some(lock) = self.take_over(local, &target, ttl).await {
                return Ok(lock.with_local(hold));
            }
        }
        let mut subscription = None;
        let mut attempts = 0;
        // Retries after a release notification do not use up `retry_count` (a queue head may lose a
        // few races to other processes in a row); they are bounded by the time the counted retries
        // would take instead.
        let mut counted = 0u32;
        // Without an acquire timeout, the retry budget counts from here: time in the local queue
        // (or the semaphore's gate) is waiting for our own tasks, not attempts lost to others.
        let budget = s.retry.budget(s.timing.node_timeout(ttl));
        let budget_end = wait.budget_end(deadline, Instant::now(), budget);
        let retries = wait.retry_count(s.retry.count, s.acquire_timeout);
        // A writer that gives up, or whose caller drops this future mid-wait, must not keep readers
        // out with its intent until the intent's TTL runs out.
        let give_up = GiveUpOnDrop {
            nodes: self.nodes(),
            cmd: target.kind.give_up_cmd(&target.keys),
        };
        // A kind with a cross-process hand-off (`crate::protocol::handoff`) attempts as a named
        // take-over once it waits on another process: one command tries and marks it at once.
        // Until the lock is ours, its entry leaves the lists when the wait ends (error, timeout, or
        // this future dropped).
        let mut take_over = LeaveOnDrop {
            core: self,
            target: &target,
            take_over: None,
            retired: Vec::new(),
        };
        if hold.as_ref().is_some_and(LocalHold::remote_waiting)
            || self.recently_contended(&target, hold.as_ref())
        {
            // Our process just yielded to a waiter elsewhere, or waited on one a moment ago: we
            // will likely wait too, so mark at once.
            take_over.take_over =
                self.take_over_mode(&target, ttl, hold.as_ref(), &mut subscription, began);
        }
        // Once we wait on another process, every attempt is preceded by our waiter mark on each
        // connection: a release that beats the attempt then still finds the mark and publishes.
        let mut mark_ahead: Option<Cmd> = None;
        // The mark just landed (first loss): the retry right after needs no second one.
        let mut just_marked = false;
        // Rounds in a row lost with some nodes granting (see `free` below).
        let mut splits = 0u32;
        let result = loop {
            attempts += 1;
            match &mark_ahead {
                Some(mark) if !just_marked => fire(self.nodes(), mark),
                _ => {}
            }
            just_marked = false;
            // Armed before the attempt, so a release that lands while it runs still wakes us.
            let notify = subscription.as_deref().map(Subscription::notify);
            let mut woken = notify.as_ref().map(|n| Box::pin(n.notified()));
            if let Some(w) = woken.as_mut() {
                w.as_mut().enable();
            }
            let attempt = self.attempt(&target, ttl, budget_end, take_over.take_over.as_ref());
            let (err, partial) = match attempt.await {
                Ok(mut lock) => {
                    lock.set_attempts(attempts);
                    take_over.won(lock.held());
                    break Ok(lock);
                }
                Err(lost) => {
                    if lost.stepped_back {
                        take_over.step_back();
                        // Before the next epoch's value is first sent (see `forget_all_grants`).
                        if let Some(sub) = &subscription {
                            sub.forget_all_grants();
                        }
                    }
                    (lost.err, lost.partial)
                }
            };
            // A loss to another owner does not count for a call that waits until acquired: only
            // an outage's losses in a row end it (`Wait::counts`).
            counted = match wait.counts(&err) {
                true => counted + 1,
                false => 0,
            };
            let out_of_time = budget_end.is_some_and(|end| Instant::now() >= end);
            if out_of_time && deadline.is_some() && wait.retries() && err.is_retryable() {
                // The call's own time ran out (as at the retry pause below): say so, with why the
                // last attempt lost.
                let last = Some(Box::new(err));
                break Err(LockError::Timeout { attempts, last });
            }
            if !wait.retries() || !err.is_retryable() || counted > retries || out_of_time {
                break Err(err);
            }
            let mut pause = s.retry.next_delay();
            // A round granted on some nodes but lost: the votes may have split three ways with
            // nobody holding a majority, and then no release will wake anyone. Retry early (free)
            // at a random moment, so the other sides are not met again, each time in a row twice
            // as late, until that is the retry pause (a holder that does have a majority is asked
            // a few times, not polled). A take-over a release named kept the key reserved where it
            // got it (`TakeOver::step_back_cmd`) and retries within that reservation.
            let early = match &take_over.take_over {
                Some(t) if t.is_named() => self.reservation(ttl).mul_f64(fastrand::f64()),
                _ => self.split_pause() * 2u32.pow(splits.min(16)),
            };
            // This retry does not use up `retry_count` (decremented once, however many reasons).
            let free = partial && early < pause;
            if free {
                splits += 1;
                counted = counted.saturating_sub(1);
                pause = early;
            } else {
                splits = 0;
            }
            // The loss said when the holder's keys run out (a kind whose acquire answers its
            // holder's time left): retry then rather than up to a pause later. An expired holder
            // publishes nothing, so without this a waiter finds out only at its next pause's end.
            // The time counts from the nodes' reading, before the reply arrived, plus 1 ms for
            // `PTTL`'s rounding: the retry reaches the nodes after the expiry, never before. Every
            // waiter aims at the same expiry, so each adds a random part of a round trip, as a
            // woken waiter does (`spread`), lest they all arrive together and split the votes.
            if let LockError::Contended {
                retry_after: Some(free_in),
                local: false,
                ..
            } = &err
            {
                let at_expiry = *free_in + Duration::from_millis(1) + self.spread();
                pause = pause.min(at_expiry);
            }
            take_over.take_over = take_over.take_over.take().map(|t| t.named(false));
            if deadline.is_some_and(|d| Instant::now() + pause >= d) {
                let last = Some(Box::new(err));
                break Err(LockError::Timeout { attempts, last });
            }
            let remote = matches!(err, LockError::Contended { local: false, .. });
            if remote && take_over.take_over.is_none() {
                take_over.take_over =
                    self.take_over_mode(&target, ttl, hold.as_ref(), &mut subscription, began);
                if take_over.take_over.is_some() {
                    // Marked by the take-over itself, atomically with its attempt: at once (free).
                    counted = counted.saturating_sub(u32::from(!free));
                    continue;
                }
            }
            let marks = take_over.take_over.is_none() && self.notifies(&target.keys);
            if remote && marks && target.kind.queues_locally() {
                // Tell the holder's process that someone elsewhere waits, so it yields to us when its
                // local hand-off streak ends (see `Redlock::release`).
                let key = &target.keys.as_slice()[0];
                let mark_for = pause + s.timing.node_timeout(ttl) * 2;
                let mark = mark_waiting_cmd(key, mark_for);
                if subscription.is_none() {
                    subscription = Some(Arc::new(self.notifier().subscribe(key)));
                }
                if mark_ahead.is_none() {
                    // The first loss: the holder may have released between our attempt and our
                    // mark, unheard. Wait only for the mark to land, then try again at once (free).
                    let marked = self.fan_out(
                        &mark,
                        Deadline::fixed(Instant::now() + self.round_timeout(ttl)),
                        Vote::of_script,
                    );
                    marked.await;
                    mark_ahead = Some(mark);
                    just_marked = true;
                    counted = counted.saturating_sub(u32::from(!free));
                    continue;
                }
                mark_ahead = Some(mark);
            }
            // A release anywhere ends the pause early, and so does the subscription becoming active
            // (one immediate retry covers a release that landed before it); the timer is the
            // fallback for any other missed one.
            let fresh;
            self.metrics().retry();
            let woken = match (woken, &subscription) {
                (Some(woken), _) => Some(woken),
                (None, Some(sub)) => {
                    fresh = sub.notify();
                    Some(Box::pin(fresh.notified()))
                }
                (None, None) => None,
            };
            let heard = match woken {
                Some(woken) => {
                    tokio::select! {
                        _ = woken => true,
                        _ = tokio::time::sleep(pause) => false,
                    }
                }
                None => {
                    tokio::time::sleep(pause).await;
                    false
                }
            };
            if heard {
                // Woken by a release: this retry is free (see `counted`).
                counted = counted.saturating_sub(u32::from(!free));
                splits = 0;
                // The release may have granted our entry: then the lock is ours without a round.
                if let (Some(t), Some(sub)) = (&take_over.take_over, &subscription) {
                    if let Some(mut lock) = t.granted(self, &target, ttl, sub).await {
                        lock.set_attempts(attempts);
                        take_over.won(lock.held());
                        break Ok(lock);
                    }
                }
                take_over.take_over = take_over.take_over.take().map(|t| t.named(true));
                self.spread_wake(take_over.take_over.is_some()).await;
            }
        };
        if result.is_ok() {
            give_up.disarm();
        }
        result.map(|lock| lock.with_local(hold))
    }

    /// Takes this task's turn in the resource's local queue (exclusive and write locks only).
    async fn enter_local(
        &self,
        target: &Target,
        ttl: Duration,
        wait: Wait,
        deadline: Option<Instant>,
    ) -> Result<Option<LocalHold<Lock>>, LockError> {
        let s = self.settings();
        if !s.local_queue || !target.kind.queues_locally() {
            return Ok(None);
        }
        let key = &target.keys.as_slice()[0];
        let local_contended = || LockError::Contended {
            taken: 0,
            nodes: self.nodes().len(),
            local: true,
            retry_after: None,
            holder: None,
        };
        if !wait.retries() {
            return self.queues().try_enter(key).map_err(|()| local_contended());
        }
        // Waiting locally stands in for the attempts it saves, so it gets their budget. A shutdown
        // closes the queue (`LocalQueues::close`): the wait ends, and the attempt after it is refused.
        let budget = s
            .acquire_timeout
            .unwrap_or_else(|| s.retry.budget(s.timing.node_timeout(ttl)));
        let Some(until) = wait.budget_end(deadline, Instant::now(), budget) else {
            return Ok(self.queues().enter(key).await);
        };
        match tokio::time::timeout_at(until, self.queues().enter(key)).await {
            Ok(hold) => Ok(hold),
            Err(_) if deadline.is_some() => Err(LockError::Timeout {
                attempts: 0,
                last: None,
            }),
            Err(_) => Err(local_contended()),
        }
    }

    /// Takes a lock the previous local holder handed off, if it is still good for `ttl`.
    async fn take_over(
        &self,
        hold: &LocalHold<Lock>,
        target: &Target,
        ttl: Duration,
    ) -> Option<Lock> {
        // Released if this future is dropped while extending, or if the lock is not usable.
        let mut guard = HeldGuard::new(self, hold.take_handoff()?);
        let lock = guard.lock_mut();
        // After a shutdown its keys are being released: not a lock to hand on.
        if !lock.is_for(target) || !lock.is_valid() || self.is_closed() {
            return None;
        }
        // Enough validity left: no round trip at all. Otherwise one extend instead of release + acquire.
        let min = self.settings().timing.min_validity(ttl).max(ttl / 2);
        if lock.remaining() < min && self.extend(guard.lock_mut(), ttl).await.is_err() {
            return None;
        }
        let mut lock = guard.keep();
        lock.handed_over();
        Some(lock)
    }
}

/// Marks (for `mark_for`) that a client elsewhere waits for the lock at `key`.
fn mark_waiting_cmd(key: &bytes::Bytes, mark_for: Duration) -> Cmd {
    script_cmd(
        &MARK_WAITING,
        &Keys::One(key.clone()),
        LockValue::ZERO,
        Args::of(&[millis(mark_for).max(1)]),
    )
}

/// A take-over wait's state: the take-over, and the values it retired at its step backs. Takes its
/// entries out of the lists when the wait ends without the lock (error, timeout or cancellation;
/// `Core::leave_take_over`).
struct LeaveOnDrop<'a> {
    core: &'a Core,
    target: &'a Target,
    take_over: Option<TakeOver>,
    retired: Vec<LockValue>,
}

impl LeaveOnDrop<'_> {
    /// After a step back: the next epoch's value (`TakeOver::stepped_back`), or after the last
    /// one, the end of this take-over (its entries leave the lists; the next loss to another
    /// process starts a new one).
    fn step_back(&mut self) {
        let Some(t) = self.take_over.take() else {
            return;
        };
        match t.clone().stepped_back() {
            Some((next, retired)) => {
                self.retired.push(retired);
                self.take_over = Some(next);
            }
            None => self.core.leave_take_over(self.target, &t, &self.retired),
        }
    }

    /// The lock is ours (`held`: the nodes that count for it): our entries leave the lists where
    /// those nodes did not take them out. After a step back, an earlier value's entry or key may be
    /// left on any node: then every node gets the unmark, and the retired values are released where
    /// they do not count for the lock.
    fn won(&mut self, held: u16) {
        let Some(t) = self.take_over.take() else {
            return;
        };
        if self.retired.is_empty() {
            return self.core.unmark(self.target, &t, held);
        }
        self.core.unmark(self.target, &t, 0);
        self.core
            .release_retired(self.target, &t, &self.retired, held);
    }
}

impl Drop for LeaveOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.take_over.take() {
            self.core.leave_take_over(self.target, &t, &self.retired);
        }
    }
}

/// Withdraws a writer's intent when its acquire ends without the lock (error or cancellation).
struct GiveUpOnDrop<'a> {
    nodes: &'a [Arc<dyn NodeClient>],
    cmd: Option<Cmd>,
}

impl GiveUpOnDrop<'_> {
    fn disarm(mut self) {
        self.cmd = None;
    }
}

impl Drop for GiveUpOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(cmd) = self.cmd.take() {
            fire(self.nodes, &cmd);
        }
    }
}
