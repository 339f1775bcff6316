//! The exclusive family's acquire (every kind but the fair lock and the slots): its turn in the local
//! queue, taking over a lock handed off by the previous local holder, then the shared wait loop
//! (`super::wait`) with this family's waiter: plain attempts, the waiter mark once it waits on
//! another process, or a named take-over that a release can grant.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::core::Core;
use super::fanout::{fire, Deadline};
use super::release::HeldGuard;
use super::takeover::TakeOver;
use super::wait::{After, Bounds, Ended, Next, Waiter};
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
        // Without an acquire timeout, the retry budget counts from here: time in the local queue
        // (or the semaphore's gate) is waiting for our own tasks, not attempts lost to others.
        let bounds = Bounds::new(
            self,
            wait,
            began,
            s.retry.budget(s.timing.node_timeout(ttl)),
        );
        let mut waiter = Rounds {
            core: self,
            target: &target,
            ttl,
            began,
            hold: hold.as_ref(),
            subscription: None,
            // A writer that gives up, or whose caller drops this future mid-wait, must not keep
            // readers out with its intent until the intent's TTL runs out.
            give_up: GiveUpOnDrop {
                nodes: self.nodes(),
                cmd: target.kind.give_up_cmd(&target.keys),
            },
            // A kind with a cross-process hand-off (`crate::protocol::handoff`) attempts as a
            // named take-over once it waits on another process: one command tries and marks it at
            // once. Until the lock is ours, its entry leaves the lists when the wait ends (error,
            // timeout, or this future dropped).
            take_over: LeaveOnDrop {
                core: self,
                target: &target,
                current: None,
                retired: Vec::new(),
            },
            mark_ahead: None,
            just_marked: false,
            splits: 0,
            partial: false,
        };
        if hold.as_ref().is_some_and(LocalHold::remote_waiting)
            || self.recently_contended(&target, hold.as_ref())
        {
            // Our process just yielded to a waiter elsewhere, or waited on one a moment ago: we
            // will likely wait too, so mark at once.
            waiter.take_over.current =
                self.take_over_mode(&target, ttl, hold.as_ref(), &mut waiter.subscription, began);
        }
        let result = self.wait_for(&mut waiter, bounds).await;
        drop(waiter);
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

/// The exclusive family's waiter (every kind but the fair lock and the slots): plain attempts, and
/// once it waits on another process, its waiter mark ahead of each attempt, or a named take-over.
struct Rounds<'a> {
    core: &'a Core,
    target: &'a Target,
    ttl: Duration,
    /// When the call began waiting: a take-over's place among the other processes' waiters.
    began: Instant,
    hold: Option<&'a LocalHold<Lock>>,
    /// Release wake-ups for the key (and a take-over's grants), once we wait on another process.
    subscription: Option<Arc<Subscription>>,
    give_up: GiveUpOnDrop<'a>,
    take_over: LeaveOnDrop<'a>,
    /// Once we wait on another process, every attempt is preceded by our waiter mark on each
    /// connection: a release that beats the attempt then still finds the mark and publishes.
    mark_ahead: Option<Cmd>,
    /// The mark just landed (first loss): the retry right after needs no second one.
    just_marked: bool,
    /// Rounds in a row lost with some nodes granting (see `next`).
    splits: u32,
    /// The last round was granted on some nodes.
    partial: bool,
}

impl Rounds<'_> {
    /// The lock is ours: nothing of the wait is left to give up.
    fn won(&mut self, lock: Lock) -> Lock {
        self.take_over.won(lock.held());
        self.give_up.disarm();
        lock
    }
}

impl Waiter for Rounds<'_> {
    fn wake(&self) -> Option<Arc<Notify>> {
        self.subscription.as_deref().map(Subscription::notify)
    }

    async fn round(
        &mut self,
        attempts: &mut u32,
        until: Option<Instant>,
    ) -> Result<Lock, LockError> {
        *attempts += 1;
        match &self.mark_ahead {
            Some(mark) if !self.just_marked => fire(self.core.nodes(), mark),
            _ => {}
        }
        self.just_marked = false;
        let take_over = self.take_over.current.as_ref();
        match self
            .core
            .attempt(self.target, self.ttl, until, take_over)
            .await
        {
            Ok(lock) => Ok(self.won(lock)),
            Err(lost) => {
                if lost.stepped_back {
                    self.take_over.step_back();
                    // Before the next epoch's value is first sent (see `forget_all_grants`).
                    if let Some(sub) = &self.subscription {
                        sub.forget_all_grants();
                    }
                }
                self.partial = lost.partial;
                Err(lost.err)
            }
        }
    }

    async fn next(&mut self, err: &LockError, mut pause: Duration) -> Next {
        let (core, target, ttl) = (self.core, self.target, self.ttl);
        // A round granted on some nodes but lost: the votes may have split three ways with nobody
        // holding a majority, and then no release will wake anyone. Retry early (free) at a random
        // moment, so the other sides are not met again, each time in a row twice as late, until
        // that is the retry pause (a holder that does have a majority is asked a few times, not
        // polled). A take-over a release named kept the key reserved where it got it
        // (`TakeOver::step_back_cmd`) and retries within that reservation.
        let early = match &self.take_over.current {
            Some(t) if t.is_named() => core.reservation(ttl).mul_f64(fastrand::f64()),
            _ => core.split_pause() * 2u32.pow(self.splits.min(16)),
        };
        let free = self.partial && early < pause;
        if free {
            self.splits += 1;
            pause = early;
        } else {
            self.splits = 0;
        }
        // The loss said when the holder's keys run out (a kind whose acquire answers its holder's
        // time left): retry then rather than up to a pause later. An expired holder publishes
        // nothing, so without this a waiter finds out only at its next pause's end. The time
        // counts from the nodes' reading, before the reply arrived, plus 1 ms for `PTTL`'s
        // rounding: the retry reaches the nodes after the expiry, never before. Every waiter aims
        // at the same expiry, so each adds a random part of a round trip, as a woken waiter does
        // (`spread`), lest they all arrive together and split the votes.
        if let LockError::Contended {
            retry_after: Some(free_in),
            local: false,
            ..
        } = err
        {
            let at_expiry = *free_in + Duration::from_millis(1) + core.spread();
            pause = pause.min(at_expiry);
        }
        let t = &mut self.take_over.current;
        *t = t.take().map(|t| t.named(false));
        let remote = matches!(err, LockError::Contended { local: false, .. });
        if remote && self.take_over.current.is_none() {
            self.take_over.current =
                core.take_over_mode(target, ttl, self.hold, &mut self.subscription, self.began);
            if self.take_over.current.is_some() {
                // Marked by the take-over itself, atomically with its attempt: at once.
                return Next::AtOnce;
            }
        }
        let marks = self.take_over.current.is_none() && core.notifies(&target.keys);
        if remote && marks && target.kind.queues_locally() {
            // Tell the holder's process that someone elsewhere waits, so it yields to us when its
            // local hand-off streak ends (see `Redlock::release`).
            let key = &target.keys.as_slice()[0];
            let mark_for = pause + core.settings().timing.node_timeout(ttl) * 2;
            let mark = mark_waiting_cmd(key, mark_for);
            if self.subscription.is_none() {
                self.subscription = Some(Arc::new(core.notifier().subscribe(key)));
            }
            if self.mark_ahead.is_none() {
                // The first loss: the holder may have released between our attempt and our mark,
                // unheard. Wait only for the mark to land, then try again at once.
                let marked = core.fan_out(
                    &mark,
                    Deadline::fixed(Instant::now() + core.round_timeout(ttl)),
                    Vote::of_script,
                );
                marked.await;
                self.mark_ahead = Some(mark);
                self.just_marked = true;
                return Next::AtOnce;
            }
            self.mark_ahead = Some(mark);
        }
        Next::Pause { pause, free }
    }

    async fn after(&mut self, ended: Ended, _until: Instant) -> After {
        if ended != Ended::Heard {
            return After::Round;
        }
        self.splits = 0;
        // The release may have granted our entry: then the lock is ours without a round.
        if let (Some(t), Some(sub)) = (&self.take_over.current, &self.subscription) {
            if let Some(lock) = t.granted(self.core, self.target, self.ttl, sub).await {
                return After::Won(Box::new(self.won(lock)));
            }
        }
        let t = &mut self.take_over.current;
        *t = t.take().map(|t| t.named(true));
        let named = self.take_over.current.is_some();
        self.core.spread_wake(named).await;
        After::Round
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
    /// The take-over the wait attempts as now (`None`: plain attempts).
    current: Option<TakeOver>,
    retired: Vec<LockValue>,
}

impl LeaveOnDrop<'_> {
    /// After a step back: the next epoch's value (`TakeOver::stepped_back`), or after the last
    /// one, the end of this take-over (its entries leave the lists; the next loss to another
    /// process starts a new one).
    fn step_back(&mut self) {
        let Some(t) = self.current.take() else {
            return;
        };
        match t.clone().stepped_back() {
            Some((next, retired)) => {
                self.retired.push(retired);
                self.current = Some(next);
            }
            None => self.core.leave_take_over(self.target, &t, &self.retired),
        }
    }

    /// The lock is ours (`held`: the nodes that count for it): our entries leave the lists where
    /// those nodes did not take them out. After a step back, an earlier value's entry or key may be
    /// left on any node: then every node gets the unmark, and the retired values are released where
    /// they do not count for the lock.
    fn won(&mut self, held: u16) {
        let Some(t) = self.current.take() else {
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
        if let Some(t) = self.current.take() {
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
    fn disarm(&mut self) {
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
