//! The fair lock's waiter in the engine's one wait loop (`crate::engine::wait`; its protocol and
//! argument are in `kinds::fair`): the enqueue round, the agree round when the nodes' tickets
//! disagreed, then attempts at each release notification or keepalive pause, until granted on a
//! majority with enough validity — by its own round, by a release of this engine that named it
//! while parked, or by releases' grant messages for its current epoch — or the wait ends and the
//! waiter gives its place up.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::replies::{bit, Replies};
use super::spec::{
    attempt_in, enqueue_cmd, grant_message, leave_cmd, unlock_cmd, wake_channel, wake_name,
    LAST_EPOCH,
};
use crate::algo::clock::JumpMark;
use crate::algo::quorum::{quorum, Vote};
use crate::algo::retry::Wait;
use crate::algo::timing::millis;
use crate::algo::value::LockValue;
use crate::algo::verdict::acquire_error;
use crate::engine::core::Core;
use crate::engine::fanout::run;
use crate::engine::parked::Handed;
use crate::engine::successors::Registration;
use crate::engine::wait::{After, Bounds, Ended, Next, Waiter, LAST_ROUND_LEAD};
use crate::error::LockError;
use crate::lock::Lock;
use crate::observe::Op;
use crate::protocol::cmd::Cmd;
use crate::protocol::spec::Target;
use crate::transport::subscriber::Subscription;
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

/// The fair lock's wait: its waiter in the engine's one wait loop (`Core::wait_for`).
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
        // One try: the enqueue and, if the tickets disagree, the agree round.
        let budget = match patience {
            Wait::Once => self.core.round_timeout(ttl) * 2,
            _ => s.retry.budget(s.timing.node_timeout(ttl)),
        };
        let bounds = Bounds::new(self.core, patience, Instant::now(), budget);
        let code = target.kind.spec().code;
        let value = LockValue::tagged(self.core.tag(), code)
            .map_err(|e| LockError::Random(e.to_string()))?;
        let key = &target.keys.as_slice()[0];
        // Woken only by messages naming us (we are a node's new head, also after an operator's
        // forced release) or naming nobody; the keepalive pause is the safety net for lost ones.
        let notify = s.notify_releases.then(|| {
            self.core
                .notifier()
                .subscribe_lingering(&wake_channel(key, value), wake_name(value))
        });
        let listens = notify.is_some()
            && self.core.notifier().heard_nodes() >= quorum(self.core.nodes().len());
        let mut waiter = Places {
            wait: self,
            target: &target,
            ttl,
            value,
            epoch: 0,
            since: Instant::now(),
            jumps: self.core.jump_mark(),
            unlocked: 0,
            named: false,
            // Gives the place up on every node unless the lock is handed out: on error, timeout,
            // or this future being dropped mid-wait.
            leave: Fire {
                core: self.core,
                cmd: Some(leave_cmd(&target.keys, value, LAST_EPOCH)),
                ttl,
                nodes: u16::MAX,
                resend: true,
            },
            sub: notify,
            placed: None,
            placed_once: false,
            until: bounds.budget_end,
            listens,
        };
        let result = self.core.wait_for(&mut waiter, bounds).await;
        let placed_once = waiter.placed_once;
        drop(waiter);
        match result {
            // An enqueue that never reached a majority: the outage, not a wait for a turn.
            Err(LockError::Timeout {
                last: Some(last), ..
            }) if !placed_once && matches!(*last, LockError::QuorumNotReached { .. }) => Err(*last),
            other => other,
        }
    }

    /// Out of every queue before a new enqueue, so no stale entry of ours blocks anyone. Sent once,
    /// ahead of the new enqueue on each connection: a copy re-sent later could land after the new
    /// place's grant (same value) and delete it, leaving our lock a node short (with 5 nodes and a
    /// bare majority, another waiter could then win). A `NOSCRIPT` runs it again behind later
    /// commands all the same, so it names the old place's `last` epoch and does nothing where the
    /// new place's live key is already there (`LEAVE`). Where it does not land, the enqueue
    /// replaces the stale entry, or the entry expires.
    fn requeue(&self, target: &Target, value: LockValue, last: u64) {
        crate::engine::fanout::fire(self.core.nodes(), &leave_cmd(&target.keys, value, last));
    }

    /// One enqueue (`Round::Enqueue`, which waits for every answer) or attempt round: granted,
    /// still queued, or to start over. The unlock after a lost round moves the waiter to
    /// `moved_to` (its round's second epoch) where it goes; the mask says where it went
    /// (`Places::send`).
    async fn round(
        &self,
        target: &Target,
        (round, cmd): (Round, &Cmd),
        value: LockValue,
        ttl: Duration,
        end: Option<Instant>,
        moved_to: u64,
    ) -> (Outcome, u16) {
        let _slot = match self.core.admit(end).await {
            Ok(slot) => slot,
            // Not sent (`Overloaded`), as an exclusive attempt's refusal reads.
            Err(refused) => return (Outcome::Queued(refused, None), 0),
        };
        let jumps = self.core.jump_mark();
        let start = Instant::now();
        // Keys of ours this round set are released unless the lock is handed out (the place kept):
        // where a node may have set one, every node until the replies say.
        let mut unlock = Fire {
            core: self.core,
            cmd: Some(unlock_cmd(&target.keys, value, millis(ttl), moved_to)),
            ttl,
            nodes: u16::MAX,
            // Sent once, on each connection behind the round: a copy re-sent later (on a new
            // connection) could land after a later grant of this same value — by our next round or
            // a release that names us (`crate::engine::successors`) — and delete it. (A `NOSCRIPT`
            // runs it again as `EVAL` behind later commands: the script then finds our live key
            // past the round's epoch and does nothing, `UNLOCK_FAIR`.) A key it misses is our
            // next round's to clean (it deletes our key where we are not the head), or our
            // give-up's, or it expires.
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
        let moved = unlock.nodes & bits(n);
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
                    (Outcome::Granted(lock), 0)
                }
                Err(err) => (Outcome::Queued(err, placed), moved),
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
            (Outcome::Requeue(err), moved)
        } else {
            (Outcome::Queued(err, placed), moved)
        }
    }
}

/// Where the waiter stands once an enqueue placed it: its ticket (its attempts carry it) and its
/// registration as parked between rounds, where a release by this engine may grant it
/// (`crate::engine::successors`).
struct Placed<'a> {
    ticket: u64,
    parked: Registration<'a>,
}

/// The fair lock's waiter: enqueue (and the agree round when the tickets disagree), then attempts
/// from its place at each wake-up or keepalive pause; a place lost is given up and taken again.
struct Places<'a> {
    wait: &'a FairWait<'a>,
    target: &'a Target,
    ttl: Duration,
    value: LockValue,
    /// The current epoch (`kinds::fair`: a release's grant by message counts only for it), from
    /// just before the round that set it (`since`, with the clock guard's mark then): every round
    /// of ours starts a new one, and its unlock, which may delete our keys, moves the nodes it
    /// goes to on to the one after (`unlocked`); a round takes two numbers.
    epoch: u64,
    since: Instant,
    jumps: JumpMark,
    /// The nodes the last round's unlock went to: they moved to `epoch + 1` (see `send`).
    unlocked: u16,
    /// A message named us since the epoch began: grants for it may be written down in the hub.
    named: bool,
    leave: Fire<'a>,
    /// Our wake-ups and grants (`None`: notifications off).
    sub: Option<Subscription>,
    placed: Option<Placed<'a>>,
    /// An enqueue reached a majority at least once (a place was held).
    placed_once: bool,
    /// The wait's budget end (`Bounds::budget_end`; `None`: none).
    until: Option<Instant>,
    /// We hear a majority of the nodes publish (notifications on, and not a node set of mostly
    /// Sentinel-managed nodes, which publish to no connection of ours): our turn comes by message.
    listens: bool,
}

impl Places<'_> {
    /// A round of ours goes: a new epoch, from now. The last one's grants are forgotten.
    fn next_epoch(&mut self) -> u64 {
        // Only hygiene (an older epoch's grants are never read again): skipped when no message
        // named us, which in one process is nearly always.
        if std::mem::take(&mut self.named) {
            self.forget_grants();
        }
        self.epoch += 2;
        self.unlocked = 0;
        self.since = Instant::now();
        self.jumps = self.wait.core.jump_mark();
        self.epoch
    }

    /// One round of ours (counted in `attempts`), in a new epoch: `cmd` builds its command for it.
    /// Its unlock, where it goes, moves our live keys on to the next epoch first, so a grant of the
    /// round's epoch from those nodes may be for a key it deleted and no longer counts, while the
    /// other nodes' grants of the round's epoch still do (`heard`). `since` stays: it is earlier
    /// than the unlock.
    async fn send(
        &mut self,
        round: Round,
        cmd: impl FnOnce(u64) -> Cmd,
        attempts: &mut u32,
        until: Option<Instant>,
    ) -> Outcome {
        *attempts += 1;
        let epoch = self.next_epoch();
        let cmd = cmd(epoch);
        let (target, value, ttl) = (self.target, self.value, self.ttl);
        let (outcome, unlocked) = self
            .wait
            .round(target, (round, &cmd), value, ttl, until, epoch + 1)
            .await;
        self.unlocked = unlocked;
        outcome
    }

    fn forget_grants(&self) {
        if let Some(sub) = &self.sub {
            sub.forget_grants(&grant_message(self.value, self.epoch));
            sub.forget_grants(&grant_message(self.value, self.epoch + 1));
        }
    }

    /// The nodes heard granting our current epoch (the round's, or its unlock's where that went).
    fn heard(&self, sub: &Subscription) -> u16 {
        let round = sub.grants(&grant_message(self.value, self.epoch));
        let unlock = sub.grants(&grant_message(self.value, self.epoch + 1));
        (round & !self.unlocked) | (unlock & self.unlocked)
    }

    /// The lock, if releases granted it to our current epoch on a majority, as heard on our
    /// subscription (a grant's message comes from the node that set the key, after it did). Waits
    /// for more of them up to one reservation after the first (and not past `until`); `None` when
    /// none came, too few, or with too little validity left (our round then refreshes the keys:
    /// they hold our value).
    ///
    /// Why the validity counts from `since`: a node grants our epoch only after the command that
    /// set it there (a round of ours, or its unlock) reached the node, which was sent after
    /// `since`; and it sets the key for our full TTL. So each of these keys lives at least until
    /// `since` + TTL by that node's clock, the bound a round that began at `since` would have.
    async fn granted_by_message(&mut self, until: Instant) -> Option<Lock> {
        let sub = self.sub.as_ref()?;
        self.placed.as_ref()?;
        let core = self.wait.core;
        let window = (Instant::now() + core.reservation(self.ttl)).min(until);
        loop {
            let notify = sub.notify();
            let mut next = std::pin::pin!(notify.notified());
            next.as_mut().enable();
            let heard = self.heard(sub);
            if heard == 0 {
                return None;
            }
            let mut tally = self.target.kind.tally(core.nodes().len());
            for (i, node) in core.nodes().iter().enumerate() {
                // A node that may not vote now (quarantined, its clock jumped) is not counted, as
                // in a round.
                if heard & (1 << i) != 0 && node.votes() && !node.clock_jumped() {
                    tally.record(i, Vote::Yes);
                }
            }
            if tally.won() {
                self.forget_grants();
                let round = (self.since, self.since.elapsed());
                let (value, ttl) = (self.value, self.ttl);
                let lock = core.won_lock(self.target, value, ttl, round, tally, self.jumps.clone());
                let min_validity = core.settings().timing.min_validity(ttl);
                return lock
                    .ok()
                    .filter(|l| l.is_valid() && l.remaining() >= min_validity)
                    .map(|l| self.won(l));
            }
            if tokio::time::timeout_at(window, next).await.is_err() {
                return None;
            }
        }
    }

    /// The lock is the place's end: no give-up is sent.
    fn won(&mut self, lock: Lock) -> Lock {
        self.leave.disarm();
        lock
    }

    /// A place lost: out of every queue, to enqueue again.
    fn lost_place(&mut self, err: LockError) -> LockError {
        self.placed = None;
        // The place's last epoch: its last round's unlock's.
        self.wait.requeue(self.target, self.value, self.epoch + 1);
        err
    }

    /// Before a round of our own, a release that named us answers first: it may be in flight, and
    /// is waited out, up to `end`. The lock when it granted us with validity to spare; `None`
    /// (our round goes) for anything else (too little validity left: our attempt refreshes the key
    /// we hold). `Err` when `end` passes with the claim still unanswered: no round may go then,
    /// since the release may have set our key and our attempt would find it ours and win, while the
    /// claim's lock, answered later to a wait that is gone, is released in the background
    /// (`Registration`'s drop): the caller would hold a lock whose keys are being deleted.
    async fn handed(&mut self, end: Option<Instant>) -> Result<Option<Lock>, LockError> {
        let Some(placed) = self.placed.as_ref() else {
            return Ok(None);
        };
        let resumed = match end {
            Some(end) => tokio::time::timeout_at(end, placed.parked.resume())
                .await
                .map_err(|_| LockError::Timeout {
                    attempts: 0,
                    last: None,
                })?,
            None => placed.parked.resume().await,
        };
        Ok(self.usable(resumed))
    }

    /// A release's answer as a lock we may return: granted, with at least the minimum validity
    /// left (checked here, when we take it: this task may run well after the release answered).
    fn usable(&mut self, handed: Option<Handed>) -> Option<Lock> {
        let min_validity = self.wait.core.settings().timing.min_validity(self.ttl);
        match handed {
            Some(Handed::Lock(lock)) if lock.remaining() >= min_validity => Some(self.won(*lock)),
            _ => None,
        }
    }
}

impl Waiter for Places<'_> {
    fn wake(&self) -> Option<Arc<Notify>> {
        self.sub.as_ref().map(Subscription::notify)
    }

    async fn round(
        &mut self,
        attempts: &mut u32,
        until: Option<Instant>,
    ) -> Result<Lock, LockError> {
        let (target, value, ttl) = (self.target, self.value, self.ttl);
        if self.placed.is_none() {
            let enqueue = |epoch| enqueue_cmd(&target.keys, value, millis(ttl), epoch);
            match self.send(Round::Enqueue, enqueue, attempts, until).await {
                Outcome::Granted(lock) => return Ok(self.won(lock)),
                // Admission refused: the enqueue was not sent.
                Outcome::Queued(err, None) => return Err(err),
                Outcome::Queued(err, Some((ticket, complete))) => {
                    self.placed_once = true;
                    // Parked between rounds from now on: a release by this engine may grant it
                    // then; it starts no round until that release has answered.
                    self.placed = Some(Placed {
                        ticket,
                        parked: self.wait.core.park(target, value, ticket, ttl),
                    });
                    if complete {
                        return Err(err);
                    }
                    // The agree round goes at once: the enqueue completes with it.
                }
                Outcome::Requeue(err) => return Err(self.lost_place(err)),
            }
        }
        if let Some(lock) = self.handed(until).await? {
            return Ok(lock);
        }
        let Some(ticket) = self.placed.as_ref().map(|p| p.ticket) else {
            unreachable!("placed above");
        };
        let attempt = |epoch| attempt_in(&target.keys, value, millis(ttl), ticket, epoch);
        match self.send(Round::Attempt, attempt, attempts, until).await {
            Outcome::Granted(lock) => Ok(self.won(lock)),
            Outcome::Queued(err, _) => Err(err),
            Outcome::Requeue(err) => Err(self.lost_place(err)),
        }
    }

    async fn next(&mut self, err: &LockError, pause: Duration) -> Next {
        // Attempts are also the waiter's keepalive: at most a quarter TTL apart.
        let keepalive = self.ttl / 4;
        let pause = match err {
            // Queued behind others, and listening: our turn comes by message (a release's grant,
            // or a wake-up once we head the queue with the key free), so the next round is only the
            // keepalive, or the wait's budget end. Polling at the retry pause cost every waiter a
            // round per pause: 6,400 waiters on 4 keys ran about 85k rounds a second on each node and
            // got 59-190 grants a second. What no message tells (a holder or a head that died, whose keys
            // expire) is noticed at the keepalive, at most a quarter TTL after they expired.
            LockError::Contended { .. } if self.listens && self.placed.is_some() => {
                // Just short of the budget's end (the wait loop's lead), so one last round goes
                // before it: the loop gives a deadline's last round itself, but a pause reaching
                // the retry budget's end would end the wait at once, without one.
                let left = self.until.map(|end| {
                    end.saturating_duration_since(Instant::now())
                        .saturating_sub(LAST_ROUND_LEAD)
                });
                left.map_or(keepalive, |left| left.min(keepalive))
            }
            // Not a loss to the queue's order (a node down, a round cut short): as any lock.
            _ => pause.min(keepalive),
        };
        Next::Pause { pause, free: false }
    }

    async fn answered(&self) {
        match &self.placed {
            Some(placed) => {
                // Between rounds from now: a release may name us.
                placed.parked.rest();
                placed.parked.answered().await;
            }
            None => std::future::pending().await,
        }
    }

    async fn after(&mut self, ended: Ended, until: Instant) -> After {
        // Only a claim's answer may send us back to waiting: a wake-up or the keepalive is acted
        // on whatever the answer (a wake-up is not heard twice).
        match ended {
            Ended::Timer => return After::Round,
            Ended::Heard => {
                self.named = true;
                // A release of ours that named us answers first: until it has, its lock and a
                // grant by message could both be ours, and its lock, not taken, would be released
                // under us. Once it has (or nobody named us), no release of ours can name us
                // before our next round.
                return match self.handed(Some(until)).await {
                    Ok(Some(lock)) => After::Won(Box::new(lock)),
                    Ok(None) => match self.granted_by_message(until).await {
                        Some(lock) => After::Won(Box::new(lock)),
                        None => After::Round,
                    },
                    Err(_) => After::Round,
                };
            }
            Ended::Answered => {}
        }
        let Some(placed) = self.placed.as_ref() else {
            return After::Round;
        };
        // Answered: `resume` returns at once.
        let handed = placed.parked.resume().await;
        if matches!(handed, Some(Handed::Stay)) && Instant::now() < until {
            // Granted nowhere that answered: the head is another waiter, which the release
            // granted or woke; or us, granted by message (its wake-up may have come first).
            if let Some(lock) = self.granted_by_message(until).await {
                return After::Won(Box::new(lock));
            }
            // The keepalive's due time holds however often a release's answer wakes us.
            return After::Wait;
        }
        match self.usable(handed) {
            Some(lock) => After::Won(Box::new(lock)),
            // Too little validity left, or granted on too few: our attempt, at once (it refreshes
            // or releases what we hold).
            None => After::Round,
        }
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
    fn disarm(&mut self) {
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
