//! The clock-jump rule: does a node's wall clock move with our monotonic clock? Pure logic; the
//! transport feeds it `TIME` samples.
//!
//! Redis expires keys by its **wall clock**. A node whose clock is stepped forward (an operator, an NTP
//! step, a VM resumed from a snapshot) drops every lock key at once, while their holders still count
//! that node's vote: another client can then win a majority that includes it. Stepped backward, keys
//! live longer (liveness only).
//!
//! A sample is the node's `TIME` with the local monotonic instants just before its request was written
//! (`sent`) and just after its reply was read (`received`): the node ran the command somewhere in
//! between. For two samples, the local time between the two executions therefore lies in
//! `[second.sent - first.received, second.received - first.sent]`, whatever queueing delayed either.
//! The node's clock may run at most `drift` (a fraction) faster or slower than ours, plus `slack` for
//! its granularity. So:
//! - a **forward jump**: `node_elapsed > widest * (1 + drift) + slack`;
//! - a **backward jump**: `node_elapsed < narrowest * (1 - drift) - slack`.
//!
//! Both tests only get looser when the samples are slow to come back: a slow node, a congested
//! runtime or a long gap between samples never looks like a jump. Why the monotonic instants can be
//! trusted: they come from this process's `CLOCK_MONOTONIC`, which is never stepped.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

/// How the guard judges and what it does: the drift bound, the slack for the node's clock granularity,
/// and how long a node whose clock jumped forward does not vote (the maximum lock lifetime: every key
/// it held at the jump has expired by then, whatever its clock says, and so has every lock that counted
/// its vote).
#[derive(Debug, Clone, Copy)]
pub(crate) struct GuardSettings {
    pub(crate) drift: f64,
    pub(crate) slack: Duration,
    pub(crate) hold: Duration,
}

/// Slack for the node's clock: Redis expires keys by a millisecond clock cached per command.
pub(crate) const SLACK: Duration = Duration::from_millis(2);

/// The shortest span the drift bound is applied over, and how long a baseline sample is kept: a new
/// sample is judged against a baseline up to this old (then becomes the baseline), with the drift
/// allowed over at least this span. So samples may come as often as the transport likes (a holder
/// learns of a big jump at the next one) while a small step or a slightly fast clock is judged as
/// over half-second gaps: a 5 ms step, harmless next to a lock's drift margin, is not a jump
/// because samples happen to be 80 ms apart, and a clock that runs fast is still caught within a
/// window.
pub(crate) const WINDOW: Duration = Duration::from_millis(500);

/// One node's clock, as its connection has seen it.
#[derive(Debug)]
pub(crate) struct ClockWatch {
    /// `None`: the guard is off.
    settings: Option<GuardSettings>,
    /// Whether any forward jump was ever seen: `votes` is asked for every reply, and until a jump
    /// this one load answers it.
    jumped: AtomicBool,
    state: Mutex<WatchState>,
    /// Where forward jumps are written down for the engine's locks, and this node's index there.
    log: OnceLock<(Arc<JumpLog>, usize)>,
}

#[derive(Debug, Default)]
struct WatchState {
    /// The baseline new samples are judged against (see [`WINDOW`]).
    last: Option<Sample>,
    /// No vote until then: the node's clock jumped forward.
    held_until: Option<Instant>,
}

impl ClockWatch {
    pub(crate) fn new(settings: Option<GuardSettings>) -> Self {
        Self {
            settings,
            jumped: AtomicBool::new(false),
            state: Mutex::new(WatchState::default()),
            log: OnceLock::new(),
        }
    }

    /// Writes this node's forward jumps (as node `index`) into `log` from now on.
    pub(crate) fn report_to(&self, log: Arc<JumpLog>, index: usize) {
        let _ = self.log.set((log, index));
    }

    /// Whether the guard samples this node's clock.
    pub(crate) fn enabled(&self) -> bool {
        self.settings.is_some()
    }

    /// Judges a new sample against the baseline (an earlier sample at most about [`WINDOW`] old, kept
    /// across reconnects: the server's clock is the same); a forward jump stops the node's votes for
    /// the hold.
    pub(crate) fn observe(&self, sample: Sample) -> Step {
        let Some(settings) = self.settings else {
            return Step::Steady;
        };
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let verdict = st.last.map_or(Step::Steady, |base| {
            judge_over(base, sample, settings.drift, settings.slack, WINDOW)
        });
        if let Step::Forward(_) = verdict {
            st.held_until = Some(sample.received + settings.hold);
            self.jumped.store(true, Ordering::Release);
            if let Some((log, index)) = self.log.get() {
                log.record(*index);
            }
        }
        // A new baseline after a jump (judged from there on), once the window is spent, or when
        // there was none; otherwise later samples are still judged against the older one.
        let spent = st
            .last
            .is_none_or(|base| sample.sent.saturating_duration_since(base.received) >= WINDOW);
        if spent || verdict != Step::Steady {
            st.last = Some(sample);
        }
        verdict
    }

    /// Whether the node's answers may vote now (no forward jump within the hold).
    pub(crate) fn votes(&self) -> bool {
        if !self.jumped.load(Ordering::Acquire) {
            return true;
        }
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.held_until.is_none_or(|until| Instant::now() >= until)
    }

    /// Until when a forward jump silences the node (`None`: it votes), for operators.
    pub(crate) fn silenced_until(&self) -> Option<Instant> {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.held_until.filter(|until| Instant::now() < *until)
    }
}

/// The forward jumps of every node of an engine, in the order they were seen: what lets a plain
/// [`crate::Lock`] tell, without the engine, that a node whose vote it counted has since dropped its
/// key (a renewed lock learns it at its next renewal instead).
///
/// A lock notes [`mark`](Self::mark) when its acquire (or last extend) round **starts**. Any node
/// that granted it and jumped after that mark may have dropped its key, even if the jump happened
/// before its vote arrived; a jump seen before the mark silenced the node, so its vote was not
/// counted. Rare writes (one per jump) under a mutex; the read a lock makes on every
/// `is_valid` is one atomic load until a jump happens.
#[derive(Debug)]
pub(crate) struct JumpLog {
    /// Forward jumps seen so far, on any node.
    seq: AtomicU64,
    /// Per node: the `seq` of its last forward jump (0: none).
    last: Mutex<Vec<u64>>,
    /// Woken at every forward jump, for the locks' lost signals to look again.
    news: tokio::sync::Notify,
}

impl JumpLog {
    pub(crate) fn new(nodes: usize) -> Self {
        Self {
            seq: AtomicU64::new(0),
            last: Mutex::new(vec![0; nodes]),
            news: tokio::sync::Notify::new(),
        }
    }

    /// Woken (`notify_waiters`) at every forward jump.
    pub(crate) fn news(&self) -> &tokio::sync::Notify {
        &self.news
    }

    fn record(&self, node: usize) {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let seq = self.seq.load(Ordering::Relaxed) + 1;
        if let Some(slot) = last.get_mut(node) {
            *slot = seq;
        }
        // Published after the node's entry, under the same lock: whoever sees `seq` move sees why.
        self.seq.store(seq, Ordering::Release);
        self.news.notify_waiters();
    }

    /// Now, in jumps: for a round about to start.
    pub(crate) fn mark(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// Whether the nodes in `held` (bit = node index) that have not jumped since `mark` are still the
    /// lock's quorum: `needed(nodes)` (a majority, or a semaphore's larger quorum), asked only once a
    /// jump happened.
    pub(crate) fn still_held(
        &self,
        held: u16,
        mark: u64,
        needed: impl FnOnce(usize) -> usize,
    ) -> bool {
        if self.seq.load(Ordering::Acquire) == mark {
            return true;
        }
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let kept = last
            .iter()
            .enumerate()
            .filter(|&(i, &jumped)| held & (1 << i) != 0 && jumped <= mark)
            .count();
        kept >= needed(last.len())
    }
}

/// Where the [`JumpLog`] stood when a lock's last won round started (empty: the guard is off).
#[derive(Debug, Clone, Default)]
pub(crate) struct JumpMark(pub(crate) Option<(Arc<JumpLog>, u64)>);

impl JumpMark {
    /// Whether the nodes in `held` that have not jumped since the mark are still the lock's quorum
    /// (`needed`, see [`JumpLog::still_held`]).
    pub(crate) fn still_held(&self, held: u16, needed: impl FnOnce(usize) -> usize) -> bool {
        self.0
            .as_ref()
            .is_none_or(|(log, at)| log.still_held(held, *at, needed))
    }

    /// The log's position now (0 without a log): for an extend round about to start.
    pub(crate) fn now(&self) -> u64 {
        self.0.as_ref().map_or(0, |(log, _)| log.mark())
    }

    /// After a won extend round that started at `at` (from [`now`](Self::now)).
    pub(crate) fn move_to(&mut self, at: u64) {
        if let Some((_, mark)) = &mut self.0 {
            *mark = at;
        }
    }
}

/// One reading of a node's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sample {
    /// The node's `TIME`, in microseconds since the Unix epoch (its wall clock).
    pub(crate) node_us: i64,
    /// Just before the request could reach the node.
    pub(crate) sent: Instant,
    /// Just after the reply was read.
    pub(crate) received: Instant,
}

/// What two samples say about the node's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Within the drift bound.
    Steady,
    /// Ahead of where it may be by this much: keys expired early.
    Forward(Duration),
    /// Behind where it may be by this much: keys live longer than their TTL.
    Backward(Duration),
}

/// Judges `second` against `first` (taken earlier on the same connection).
#[cfg(test)]
pub(crate) fn judge(first: Sample, second: Sample, drift: f64, slack: Duration) -> Step {
    judge_over(first, second, drift, slack, Duration::ZERO)
}

/// [`judge`], with the drift allowed over at least `span` however close the samples are.
pub(crate) fn judge_over(
    first: Sample,
    second: Sample,
    drift: f64,
    slack: Duration,
    span: Duration,
) -> Step {
    let node = second.node_us.saturating_sub(first.node_us);
    let widest = second.received.saturating_duration_since(first.sent);
    let narrowest = second.sent.saturating_duration_since(first.received);
    let most = micros(widest + widest.max(span).mul_f64(drift) + slack);
    let least = micros(narrowest) - micros(narrowest.max(span).mul_f64(drift.min(1.0)) + slack);
    if node > most {
        Step::Forward(Duration::from_micros((node - most) as u64))
    } else if node < least {
        Step::Backward(Duration::from_micros((least - node) as u64))
    } else {
        Step::Steady
    }
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

#[cfg(test)]
#[path = "clock_tests.rs"]
mod tests;
