//! The one fan-out: send a command to every node at once, then count replies until the quorum is won or
//! lost or the round's deadline passes. Acquire, release and extend are this plus a vote reader; the
//! commands nobody waits on (release-on-failure, a writer's give-up, the waiter mark) are its sending
//! half alone ([`send_all`], [`fire`]).
//!
//! Why one timer for the round: every node's request starts at the same instant, so the per-node
//! deadlines are the same instant too; one `sleep_until` replaces N timers. Replies still pending at the
//! decision are dropped here, but their commands were queued and still run: release covers them.
//!
//! Why a node is not timed out at the first expiry (see [`Deadline`]): the deadline is there to stop
//! waiting for a **silent** node, and safety does not depend on it (validity is measured whatever the
//! wait). Under load, the timer and the reply can become ready in the same turn of the runtime, and
//! this task may run before the connection's reader has handed the reply over: one short grace lets
//! it. After that, a node whose connection keeps delivering replies (within the last step) is alive
//! and answering in order, only behind: it is waited for in further steps, up to the round's last
//! moment; so is every node while this task itself runs late (a congested runtime delays the readers
//! too). Only a node that said nothing while we were on time is a timeout — so our own queueing delay
//! is not reported as a node failure.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

/// The grace after the first expiry: long enough for the connection's reader to run, short enough
/// that a dead node costs little more than its deadline.
const GRACE_MIN: Duration = Duration::from_millis(1);
const GRACE_MAX: Duration = Duration::from_millis(10);

use tokio::time::Instant;

use crate::algo::quorum::{Decision, Tally, Vote};
use crate::config::MAX_NODES;
use crate::error::NodeError;
use crate::protocol::cmd::{Cmd, NodeResult};
use crate::transport::{self, NodeClient, Pending};

/// How long a round waits for a node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    /// When the round started: a node counts as answering only with replies after this.
    pub(crate) start: Instant,
    /// The node deadline: a node silent since the round started is a timeout here (after a grace).
    pub(crate) first: Instant,
    /// How much longer each further step waits for a node that is answering.
    pub(crate) step: Duration,
    /// Never past this (what the lock's TTL or validity allows).
    pub(crate) last: Instant,
}

impl Deadline {
    /// A round that started at `start` with node deadline `timeout`, extended up to `last`.
    pub(crate) fn new(start: Instant, timeout: Duration, last: Instant) -> Self {
        let first = (start + timeout).min(last);
        Self {
            start,
            first,
            step: timeout,
            last: last.max(first),
        }
    }

    /// One fixed instant, no extension.
    pub(crate) fn fixed(at: Instant) -> Self {
        Self {
            start: at,
            first: at,
            step: Duration::ZERO,
            last: at,
        }
    }
}

/// What a round counts its replies into: one lock's [`Tally`], or one per lock of a batch.
pub(crate) trait Count {
    /// Counts node `index`'s reply; says whether the round is decided.
    fn reply(&mut self, index: usize, reply: NodeResult) -> Decision;
    /// Counts node `index` as failed (timeout, quarantine).
    fn fail(&mut self, index: usize, error: NodeError) -> Decision;
}

/// One lock's round: each reply is one vote.
struct One {
    tally: Tally,
    read: fn(NodeResult) -> Vote,
}

impl Count for One {
    fn reply(&mut self, index: usize, reply: NodeResult) -> Decision {
        self.tally.record(index, (self.read)(reply))
    }
    fn fail(&mut self, index: usize, error: NodeError) -> Decision {
        self.tally.record(index, Vote::Failed(error))
    }
}

/// The sending half of a round, for commands whose replies nobody counts: queues `cmd` on every node
/// now and hands each node's reply future to `each`.
pub(crate) fn send_all(
    nodes: &[Arc<dyn NodeClient>],
    cmd: &Cmd,
    mut each: impl FnMut(&Arc<dyn NodeClient>, Pending),
) {
    for node in nodes {
        each(node, node.send(cmd));
    }
}

/// Queues `cmd` on every node and forgets the replies.
pub(crate) fn fire(nodes: &[Arc<dyn NodeClient>], cmd: &Cmd) {
    send_all(nodes, cmd, |_, pending| drop(pending));
}

/// Sends `cmd` to all `nodes` and tallies `read(reply)` votes until decided or `deadline`.
pub(crate) async fn fan_out(
    nodes: &[Arc<dyn NodeClient>],
    cmd: &Cmd,
    deadline: Deadline,
    read: fn(NodeResult) -> Vote,
) -> Tally {
    round(nodes, cmd, deadline, read, true).await
}

/// [`fan_out`] counting into `tally` (a kind's own quorum: see `Kind::tally`). With `until_won` it
/// stops early only when won: a lost round waits for every reply (or the deadline), so its replies
/// say where the command set nothing (a take-over, whose step back then goes only where it may
/// have: `super::attempt`).
pub(crate) async fn fan_out_into(
    nodes: &[Arc<dyn NodeClient>],
    cmd: &Cmd,
    deadline: Deadline,
    read: fn(NodeResult) -> Vote,
    tally: Tally,
    until_won: bool,
) -> Tally {
    if !until_won {
        return counted(nodes, cmd, deadline, read, tally, true).await;
    }
    let mut one = UntilWon(One { tally, read });
    run(nodes, cmd, deadline, true, &mut one).await;
    one.0.tally
}

/// [`One`], open until won.
struct UntilWon(One);

impl UntilWon {
    /// Keeps a lost decision open: only a win ends the round early.
    fn only_won(decision: Decision) -> Decision {
        match decision {
            Decision::Won => Decision::Won,
            _ => Decision::Open,
        }
    }
}

impl Count for UntilWon {
    fn reply(&mut self, index: usize, reply: NodeResult) -> Decision {
        Self::only_won(self.0.reply(index, reply))
    }
    fn fail(&mut self, index: usize, error: NodeError) -> Decision {
        Self::only_won(self.0.fail(index, error))
    }
}

/// A release round: like [`fan_out`], decided by [`Tally::for_release`].
pub(crate) async fn release_round(
    nodes: &[Arc<dyn NodeClient>],
    cmd: &Cmd,
    deadline: Deadline,
) -> Tally {
    let tally = Tally::for_release(nodes.len());
    counted(nodes, cmd, deadline, Vote::of_script, tally, true).await
}

/// [`fan_out`], optionally waiting for every reply instead of stopping at the decision (for `raw`).
pub(crate) async fn round(
    nodes: &[Arc<dyn NodeClient>],
    cmd: &Cmd,
    deadline: Deadline,
    read: fn(NodeResult) -> Vote,
    early: bool,
) -> Tally {
    counted(nodes, cmd, deadline, read, Tally::new(nodes.len()), early).await
}

/// One lock's round counted into `tally`: what every single-lock round above differs in is only its
/// starting tally, its vote reader and whether it stops at the decision.
async fn counted(
    nodes: &[Arc<dyn NodeClient>],
    cmd: &Cmd,
    deadline: Deadline,
    read: fn(NodeResult) -> Vote,
    tally: Tally,
    early: bool,
) -> Tally {
    let mut one = One { tally, read };
    run(nodes, cmd, deadline, early, &mut one).await;
    one.tally
}

/// The fan-out itself: sends `cmd` to every node, feeds `count` until it is decided (with `early`) or
/// every node answered or timed out.
pub(crate) async fn run(
    nodes: &[Arc<dyn NodeClient>],
    cmd: &Cmd,
    deadline: Deadline,
    early: bool,
    count: &mut impl Count,
) {
    debug_assert!(nodes.len() <= MAX_NODES);
    // Queue on every node before waiting on any: the rounds overlap on the wire. The transport
    // renders the command for each node's server, encoding it once per kind of server.
    let mut waiting: [Option<Pending>; MAX_NODES] = std::array::from_fn(|_| None);
    // A node of several servers (a cluster) carries `cmd` on one of them: that one's vote, clock
    // guard and last reply are the node's for this round (`NodeClient::route`).
    let mut routed: [Option<Arc<dyn NodeClient>>; MAX_NODES] = std::array::from_fn(|_| None);
    for (route, node) in routed.iter_mut().zip(nodes) {
        *route = node.route(cmd);
    }
    let carrier =
        |index: usize| -> &dyn NodeClient { routed[index].as_deref().unwrap_or(&*nodes[index]) };
    transport::with_round(cmd, |round| {
        for (index, slot) in waiting.iter_mut().take(nodes.len()).enumerate() {
            let node = carrier(index);
            let pending = round.send(node);
            if node.votes() {
                *slot = Some(pending);
            } else {
                // Sent all the same (a release must reach it too); only its answer does not count.
                drop(pending);
                count.fail(index, node.silence());
            }
        }
    });
    let mut timer = pin!(tokio::time::sleep_until(deadline.first));
    let mut armed_for = deadline.first;
    let mut graced = false;
    poll_fn(|cx| {
        let mut open = 0;
        for (index, slot) in waiting.iter_mut().enumerate() {
            let Some(pending) = slot else { continue };
            match Pin::new(pending).poll(cx) {
                Poll::Ready(reply) => {
                    *slot = None;
                    // The clock guard reads the node's `TIME` just before an acquire, in the same
                    // pipeline, and judges it before this reply is handed over: a jump it saw
                    // silences the node now, so this round does not count the vote.
                    let decided = if carrier(index).clock_jumped() {
                        count.fail(index, NodeError::ClockJump)
                    } else {
                        count.reply(index, reply)
                    };
                    if decided != Decision::Open && early {
                        return Poll::Ready(());
                    }
                }
                Poll::Pending => open += 1,
            }
        }
        if open == 0 {
            return Poll::Ready(());
        }
        if timer.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            let grace = (deadline.step / 4).clamp(GRACE_MIN, GRACE_MAX);
            // This task ran well after its timer: the runtime is congested, so the connection
            // readers are probably behind too. Not the nodes' fault: wait another step.
            let congested = now.saturating_duration_since(armed_for) > grace;
            let mut still = 0;
            for (index, slot) in waiting.iter_mut().enumerate() {
                if slot.is_none() {
                    continue;
                }
                // A node that keeps answering (replies within the last step, and since the round
                // began) is alive and working through its queue in order, ours included. One late
                // reply to an earlier round, then silence, is not that.
                let since = now
                    .checked_sub(deadline.step)
                    .map_or(deadline.start, |t| t.max(deadline.start));
                let answering = carrier(index).last_reply().is_some_and(|at| at >= since);
                if now < deadline.last && (!graced || answering || congested) {
                    still += 1;
                } else if slot.take().is_some()
                    && count.fail(index, NodeError::Timeout) != Decision::Open
                    && early
                {
                    return Poll::Ready(());
                }
            }
            if still == 0 {
                return Poll::Ready(());
            }
            let wait = if graced { deadline.step } else { grace };
            graced = true;
            armed_for = (now + wait).min(deadline.last);
            timer.as_mut().reset(armed_for);
            // Poll the new timer now so it is registered with this task's waker.
            if timer.as_mut().poll(cx).is_ready() {
                cx.waker().wake_by_ref();
            }
        }
        Poll::Pending
    })
    .await;
}
