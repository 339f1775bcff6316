//! The engine's side of the cross-process hand-off (`crate::protocol::handoff`, which holds the
//! scripts and the safety argument): when a waiter becomes a named take-over, and when a release
//! reserves the key for the first waiter elsewhere instead of waking everyone.
//!
//! A queue head that lost a round to another process switches, for the rest of its acquire, to
//! [`TakeOver`] attempts under its process's wake name for the resource, queued on the nodes by
//! the wall-clock time it began waiting and woken on its own channel: a hand-off release wakes it
//! alone, with the key reserved for it, so the next process gets in without a race of every head
//! against every other and without a retry pause. A release reserves only where this process has
//! seen contention (the lock took more than one attempt, its take-over named a next waiter, or the
//! last release of the resource here found one); otherwise it is the kind's coalescable notify
//! release, which still wakes the first named waiter, without a reservation.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::core::Core;
use super::fanout::fire;
use super::waitq::LocalHold;
use crate::algo::timing::millis;
use crate::algo::value::LockValue;
use crate::lock::Lock;
use crate::protocol::cmd::Cmd;
use crate::protocol::handoff::{new_name, stable_name, wake_channel, wake_name, Handoff};
use crate::protocol::spec::{Kind, Target};
use crate::transport::subscriber::Subscription;

/// A waiter's take-over attempts: its kind's hand-off, its wake name and how long its mark lives.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TakeOver {
    handoff: &'static Handoff,
    name: u64,
    mark_ms: u64,
    /// Where the waiter queues on every node: the wall clock (µs) when it began waiting.
    since_us: u64,
    /// This attempt follows a release that named us (see [`TakeOver::step_back_cmd`]).
    named: bool,
}

impl TakeOver {
    /// What a lost take-over round sends instead of its release ([`Handoff::step_back_cmd`]): where
    /// the round set our value, our reservation if a release named us for this attempt (the nodes
    /// it has not reached yet will reserve the key for us too), else our name back in the list at
    /// its place.
    pub(crate) fn step_back_cmd(
        &self,
        core: &Core,
        target: &Target,
        value: LockValue,
        ttl: Duration,
    ) -> Cmd {
        let reserve = match self.named {
            true => millis(core.reservation(ttl)).max(1),
            false => 0,
        };
        let mark = (self.mark_ms, self.since_us);
        self.handoff
            .step_back_cmd(&target.keys, value, reserve, self.name, mark)
    }

    /// Whether this attempt follows a release that named us.
    pub(crate) fn is_named(&self) -> bool {
        self.named
    }

    /// The same waiter, its next attempt following a release that named it (`named`) or not.
    pub(crate) fn named(self, named: bool) -> Self {
        Self { named, ..self }
    }

    /// The attempt command for `value`.
    pub(crate) fn cmd(&self, target: &Target, value: LockValue, ttl: Duration) -> Cmd {
        let (name, mark) = (self.name, (self.mark_ms, self.since_us));
        self.handoff
            .take_over_cmd(&target.keys, value, millis(ttl), name, mark)
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
                .subscribe_handoff(&own, key, wake_name(name))
        };
        // Kept by the local queue for its next heads (same name): no resubscribing per head.
        *subscription = Some(match hold {
            Some(hold) => hold.kept(subscribe),
            None => Arc::new(subscribe()),
        });
        // The list lives while someone refreshes it: a waiter refreshes it at every attempt, at
        // most one retry pause apart.
        let mark_for = s.retry.delay + s.retry.jitter + s.timing.node_timeout(ttl) * 2;
        Some(TakeOver {
            handoff,
            name,
            mark_ms: millis(mark_for).max(1),
            since_us: wall_micros().saturating_sub(began.elapsed().as_micros() as u64),
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

    /// After a won take-over: drops our name where the round did not grant it (`held`: the nodes
    /// that did), so no list keeps a name whose waiter holds the lock.
    pub(crate) fn unmark(&self, target: &Target, take_over: &TakeOver, held: u16) {
        let cmd = take_over.handoff.unmark_cmd(&target.keys, take_over.name);
        for (i, node) in self.nodes().iter().enumerate() {
            if held & (1 << i) == 0 {
                fire(std::slice::from_ref(node), &cmd);
            }
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
