//! The engine's side of the cross-process hand-off (`crate::protocol::handoff`, which holds the
//! scripts and the safety argument): when a waiter becomes a named take-over, how it takes a lock a
//! release granted it, and when a release hands the key to the first waiter elsewhere instead of
//! waking everyone.
//!
//! A queue head that lost a round to another process switches, for the rest of its acquire, to
//! [`TakeOver`] attempts under its process's wake name for the resource and one value until it
//! steps back, queued on the nodes by the wall-clock time it began waiting and woken on its own
//! channel. A hand-off release sets the key to that value and says so on the channel; the waiter
//! counts the nodes it heard (`TakeOver::granted`) and, on a majority, has the lock without a round
//! of its own: a transfer between processes costs the waiter's queueing take-over and the holder's
//! release. Otherwise (a reservation, too few grants, too little validity left) the wake-up is
//! followed by a take-over round, as before grants. A release hands off only where this process has
//! seen contention (the lock took more than one attempt, its take-over named a next waiter, or the
//! last release of the resource here found one); otherwise it is the kind's coalescable notify
//! release, which grants the first waiter too.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::core::Core;
use super::waitq::LocalHold;
use crate::algo::clock::JumpMark;
use crate::algo::quorum::Vote;
use crate::algo::timing::millis;
use crate::algo::value::LockValue;
use crate::lock::Lock;
use crate::protocol::cmd::Cmd;
use crate::protocol::handoff::{new_name, stable_name, wake_channel, wake_name, Entry, Handoff};
use crate::protocol::spec::{Kind, Target};
use crate::transport::subscriber::Subscription;

/// A waiter's take-over attempts: its kind's hand-off, its entry in the lists (wake name and the
/// value it waits with), and how long its mark lives.
#[derive(Debug, Clone)]
pub(crate) struct TakeOver {
    handoff: &'static Handoff,
    entry: Entry,
    /// Just before the first command carrying the entry's value was sent: a grant of it by a
    /// release was made later, so a lock it makes counts its validity from here.
    since: Instant,
    /// Where the clock-jump log stood then: a lock granted to the entry loses the votes of nodes
    /// seen jumping since.
    jumps: JumpMark,
    mark_ms: u64,
    /// The wait has changed its value (a step back): its take-overs also take out its entries of
    /// the earlier values.
    swept: bool,
    /// This attempt follows a release that named us (see [`TakeOver::step_back_cmd`]).
    named: bool,
}

impl TakeOver {
    /// What a lost take-over round sends instead of its release, to the nodes that said yes
    /// ([`Handoff::step_back_cmd`]): our value there becomes our reservation if a release named us
    /// for this attempt (the nodes it has not reached yet will reserve the key for us too), else it
    /// is deleted.
    pub(crate) fn step_back_cmd(&self, core: &Core, target: &Target, ttl: Duration) -> Cmd {
        let reserve = match self.named {
            true => millis(core.reservation(ttl)).max(1),
            false => 0,
        };
        self.handoff
            .step_back_cmd(&target.keys, self.entry, reserve)
    }

    /// The value this waiter attempts with, the same until it steps back.
    pub(crate) fn value(&self) -> LockValue {
        self.entry.value
    }

    /// The same waiter after a step back: its value of the next epoch (the last byte one higher;
    /// `None` after 255 step backs), and the one it retires. Never the same value again after a step
    /// back: a copy of the step back that lands late (on a connection given up, through a proxy that
    /// held it) would delete a later grant of it; and a grant message of the old value may still be
    /// on its way from a node where the step back has since deleted it, so only the new value's
    /// grants are counted. A grant of an earlier epoch's entry (queued where a round was refused) is
    /// not lost: the next take-over there finds an earlier value of this wait and takes its place;
    /// the wait's end releases what is left of it (`Core::release_retired`).
    pub(crate) fn stepped_back(self) -> Option<(Self, LockValue)> {
        let epoch = self
            .entry
            .value
            .as_bytes()
            .last()
            .copied()?
            .checked_add(1)?;
        let retired = self.entry.value;
        let entry = Entry {
            value: retired.with_epoch(epoch),
            ..self.entry
        };
        Some((
            Self {
                entry,
                swept: true,
                ..self
            },
            retired,
        ))
    }

    /// The lock, if releases granted this waiter's current entry on enough nodes, as heard on
    /// `sub` (a grant's message comes from the node that set the key, after it did). Waits for
    /// more of them up to one reservation after the first; `None` when the wake-up that brought us
    /// here was no grant, when too few came, or when the lock would have too little validity left
    /// (a round then refreshes the keys: they hold our value).
    ///
    /// Why the validity counts from `since`: no node can hold the entry's value before it was first
    /// sent, and a node that granted it set the key for the entry's full TTL, so each of these keys
    /// lives at least until `since` + TTL by that node's clock — the same bound a round that began at
    /// `since` would have (drift and the clock guard's log included, from the same moment).
    pub(crate) async fn granted(
        &self,
        core: &Core,
        target: &Target,
        ttl: Duration,
        sub: &Subscription,
    ) -> Option<Lock> {
        let message = self.entry.grant_message();
        let window = Instant::now() + core.reservation(ttl);
        loop {
            let notify = sub.notify();
            let mut next = std::pin::pin!(notify.notified());
            next.as_mut().enable();
            let heard = sub.grants(&message);
            if heard == 0 {
                return None;
            }
            let mut tally = target.kind.tally(core.nodes().len());
            for (i, node) in core.nodes().iter().enumerate() {
                // A node that may not vote now (quarantined, its clock jumped) is not counted, as
                // in a round.
                if heard & (1 << i) != 0 && node.votes() && !node.clock_jumped() {
                    tally.record(i, Vote::Yes);
                }
            }
            if tally.won() {
                sub.forget_grants(&message);
                let elapsed = self.since.elapsed();
                let jumps = self.jumps.clone();
                let lock = core.won_lock(
                    target,
                    self.entry.value,
                    ttl,
                    (self.since, elapsed),
                    tally,
                    jumps,
                );
                // The votes above are the nodes' standing now, the lock's jump mark is `since`'s: a
                // node whose clock jumped during the wait and votes again already counts against
                // it. Such a lock is not handed out (it would read `is_valid() == false` at once);
                // the round that follows refreshes the keys, which hold our value.
                return lock.ok().filter(Lock::is_valid);
            }
            if tokio::time::timeout_at(window, next).await.is_err() {
                return None;
            }
        }
    }

    /// Whether this attempt follows a release that named us.
    pub(crate) fn is_named(&self) -> bool {
        self.named
    }

    /// The same waiter, its next attempt following a release that named it (`named`) or not.
    pub(crate) fn named(self, named: bool) -> Self {
        Self { named, ..self }
    }

    /// The attempt command.
    pub(crate) fn cmd(&self, target: &Target) -> Cmd {
        self.handoff
            .take_over_cmd(&target.keys, self.entry, self.mark_ms, self.swept)
    }
}

/// The wall clock in µs: a waiter's place in the lists (`protocol::handoff`). Order only: a clock off
/// on one host queues its waiters early or late (fairness), never lets two clients hold the lock.
fn wall_micros() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| d.as_micros() as u64)
}

/// The shortest reservation: time for the publish to reach the waiter and its take-over the node
/// on a busy machine. A reservation for a waiter that left blocks that node at most this long (or
/// a node timeout, when that is longer than the measured round trips ask for).
const MIN_RESERVATION: Duration = Duration::from_millis(3);

/// The longest: a named waiter later than this loses only its turn (it keeps its place), while a
/// reservation for one that never comes (gone, or not reached by the wake) idles the key this long.
/// Under load the RTT bound (and so twice it) reached the node timeout, 50 ms at a 10 s TTL.
const MAX_RESERVATION: Duration = Duration::from_millis(10);

impl Core {
    /// Turns the acquire of `target` into named take-overs, when its kind has a hand-off and its
    /// releases are published; `subscription` becomes the named one. The waiter's place is the
    /// moment its call `began` waiting, its time in the local queue included: a process's next
    /// head queues among the other processes' waiters by when it arrived, not by when the local
    /// heads before it were done (which put it behind every process that marked meanwhile, and
    /// made its wait about twice the others').
    pub(crate) fn take_over_mode(
        &self,
        target: &Target,
        ttl: Duration,
        hold: Option<&LocalHold<Lock>>,
        subscription: &mut Option<Arc<Subscription>>,
        began: Instant,
    ) -> Option<TakeOver> {
        let handoff = self.handoff_of(target.kind)?;
        if !self.notifies(&target.keys) || !target.kind.queues_locally() {
            return None;
        }
        let s = self.settings();
        // One name per process and resource (the local queue's heads share it, and its channel's
        // subscription lingers from one wait to the next); without a queue, one per acquire. Names
        // need only differ between waiters of one key.
        let key = &target.keys.as_slice()[0];
        let name = match hold {
            Some(_) => stable_name(&self.tag().0, key),
            None => new_name(),
        };
        let subscribe = || {
            let own = wake_channel(key, name);
            self.notifier()
                .subscribe_with_key(&own, key, wake_name(name))
        };
        // Kept by the local queue for its next heads (same name): no resubscribing per head. The
        // value below is new: nothing heard on the channel yet can be its grant.
        let sub = match hold {
            Some(hold) => hold.kept(subscribe),
            None => Arc::new(subscribe()),
        };
        sub.forget_all_grants();
        *subscription = Some(sub);
        // The list lives while someone refreshes it: a waiter refreshes it at every attempt, at
        // most one retry pause apart.
        let mark_for = s.retry.delay + s.retry.jitter + s.timing.node_timeout(ttl) * 2;
        let value = LockValue::tagged(self.tag(), target.kind.spec().code)
            .ok()?
            .with_epoch(0);
        Some(TakeOver {
            handoff,
            entry: Entry {
                name,
                value,
                ttl_ms: millis(ttl),
                since_us: wall_micros().saturating_sub(began.elapsed().as_micros() as u64),
            },
            jumps: self.jump_mark(),
            since: Instant::now(),
            mark_ms: millis(mark_for).max(1),
            swept: false,
            named: false,
        })
    }

    /// Whether this process waited for `target` on another process a moment ago (its wake
    /// channel for the resource is still subscribed: `LINGER`, 2 s): a new acquire of it then
    /// starts as a take-over, which tries and queues in one command, instead of a plain attempt
    /// that would lose and be followed by the take-over anyway (two commands and a round trip
    /// more per contended grant).
    pub(crate) fn recently_contended(
        &self,
        target: &Target,
        hold: Option<&LocalHold<Lock>>,
    ) -> bool {
        let Some(notifier) = self.notifier_if_started() else {
            return false;
        };
        if hold.is_none() || self.handoff_of(target.kind).is_none() {
            return false;
        }
        let key = &target.keys.as_slice()[0];
        notifier.is_subscribed(&wake_channel(key, stable_name(&self.tag().0, key)))
    }

    /// After a won take-over: drops our entry where the round did not grant it (`held`: the nodes
    /// that did), so no list keeps an entry whose waiter holds the lock (a release there would
    /// grant it the key again, for nobody). Sent again where it does not land: the entry is done.
    pub(crate) fn unmark(&self, target: &Target, take_over: &TakeOver, held: u16) {
        let cmd = (take_over.handoff).unmark_cmd(&target.keys, take_over.entry, take_over.swept);
        let until = Instant::now() + Duration::from_millis(take_over.entry.ttl_ms);
        (self.release_retry()).fire_except(self.nodes(), held, &cmd, until);
    }

    /// A take-over wait that ends without the lock: its entry out of every list, then its value
    /// released where a release granted it meanwhile (handed on to the next waiter there). Both
    /// are sent again where they do not land: nothing will use the value any more.
    pub(crate) fn leave_take_over(
        &self,
        target: &Target,
        take_over: &TakeOver,
        retired: &[LockValue],
    ) {
        let entry = take_over.entry;
        let until = Instant::now() + Duration::from_millis(entry.ttl_ms);
        let unmark = (take_over.handoff).unmark_cmd(&target.keys, entry, take_over.swept);
        self.release_retry().fire(self.nodes(), &unmark, until);
        let reserve = millis(self.reservation(Duration::from_millis(entry.ttl_ms)));
        let values = std::iter::once(entry.value).chain(retired.iter().copied());
        for value in values {
            let release = (take_over.handoff).release_cmd(&target.keys, value, reserve);
            self.release_retry().fire(self.nodes(), &release, until);
        }
    }

    /// Releases a won wait's retired values on the nodes outside `held` (owner-checked: only where
    /// one of them is still there — a grant of its entry, or a round of it that landed late —
    /// handing the key on; a node in `held` holds the lock's own value). Sent again where it does
    /// not land: no lock holds a retired value.
    pub(crate) fn release_retired(
        &self,
        target: &Target,
        take_over: &TakeOver,
        retired: &[LockValue],
        held: u16,
    ) {
        let ttl = Duration::from_millis(take_over.entry.ttl_ms);
        let reserve = millis(self.reservation(ttl));
        for old in retired {
            let release = (take_over.handoff).release_cmd(&target.keys, *old, reserve);
            (self.release_retry()).fire_except(self.nodes(), held, &release, Instant::now() + ttl);
        }
    }

    /// The release command for `lock`: the hand-off release where this process saw contention on
    /// it (see the module doc), else the kind's release (waking waiters when configured); and
    /// whether it is the hand-off's (its answer 2 then means the key is reserved for a waiter).
    pub(crate) fn release_cmd_for(
        &self,
        lock: &Lock,
        local: Option<&LocalHold<Lock>>,
    ) -> (Cmd, bool) {
        let notify = self.notifies(lock.keys());
        match self.handoff_of(lock.kind()) {
            Some(handoff)
                if notify
                    && (lock.next_waiter() != 0
                        || lock.attempts() > 1
                        || local.is_some_and(LocalHold::remote_waiting)) =>
            {
                let reserve = millis(self.reservation(lock.ttl()));
                let cmd = match lock.next_waiter() {
                    0 => handoff.release_cmd(lock.keys(), lock.value(), reserve),
                    next => handoff.release_to_cmd(lock.keys(), lock.value(), reserve, next),
                };
                (cmd, true)
            }
            _ => (lock.release_cmd(notify), false),
        }
    }

    /// `kind`'s hand-off, where `Config::cross_process_handoff` turns it on.
    fn handoff_of(&self, kind: Kind) -> Option<&'static Handoff> {
        kind.handoff()
            .filter(|_| self.settings().cross_process_handoff)
    }

    /// How long a hand-off release reserves the key: two measured round trips, at least
    /// [`MIN_RESERVATION`], at most a node timeout or [`MAX_RESERVATION`].
    pub(crate) fn reservation(&self, ttl: Duration) -> Duration {
        let timeout = self.settings().timing.node_timeout(ttl);
        let cap = timeout.min(MAX_RESERVATION).max(MIN_RESERVATION);
        self.rtt_bound()
            .map_or(cap, |rtt| rtt * 2)
            .clamp(MIN_RESERVATION, cap)
    }
}
