//! The one fan-out: send a command to every node at once, then count replies until the quorum is won or
//! lost or the round's deadline passes. Acquire, release and extend are this plus a vote reader.
//!
//! Why one timer for the round: every node's request starts at the same instant, so the per-node
//! deadlines are the same instant too; one `sleep_until` replaces N timers. Replies still pending at the
//! decision are dropped here, but their commands were queued and still run: release covers them.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::Poll;

use tokio::time::Instant;

use crate::config::MAX_NODES;
use crate::error::NodeError;
use crate::quorum::{Decision, Tally, Vote};
use crate::transport::{self, Cmd, NodeClient, NodeResult, Pending};

thread_local! {
    /// The current round's encoded command; reused, so a round allocates nothing for it.
    static ENCODED: std::cell::RefCell<bytes::BytesMut> =
        std::cell::RefCell::new(bytes::BytesMut::with_capacity(256));
}

/// Sends `cmd` to all `nodes` and tallies `read(reply)` votes until decided or `deadline`.
pub(crate) async fn fan_out(
    nodes: &[Arc<dyn NodeClient>],
    cmd: &Cmd,
    deadline: Instant,
    read: fn(NodeResult) -> Vote,
) -> Tally {
    round(nodes, cmd, deadline, read, true).await
}

/// A release round: like [`fan_out`], decided by [`Tally::for_release`].
pub(crate) async fn release_round(
    nodes: &[Arc<dyn NodeClient>],
    cmd: &Cmd,
    deadline: Instant,
) -> Tally {
    run(
        nodes,
        cmd,
        deadline,
        Vote::of_script,
        true,
        Tally::for_release(nodes.len()),
    )
    .await
}

/// [`fan_out`], optionally waiting for every reply instead of stopping at the decision (for `raw`).
pub(crate) async fn round(
    nodes: &[Arc<dyn NodeClient>],
    cmd: &Cmd,
    deadline: Instant,
    read: fn(NodeResult) -> Vote,
    early: bool,
) -> Tally {
    run(nodes, cmd, deadline, read, early, Tally::new(nodes.len())).await
}

async fn run(
    nodes: &[Arc<dyn NodeClient>],
    cmd: &Cmd,
    deadline: Instant,
    read: fn(NodeResult) -> Vote,
    early: bool,
    mut tally: Tally,
) -> Tally {
    debug_assert!(nodes.len() <= MAX_NODES);
    // Queue on every node before waiting on any: the rounds overlap on the wire. The command is
    // encoded once for all of them (into a per-thread buffer: nothing awaits while it is borrowed).
    let mut waiting: [Option<Pending>; MAX_NODES] = std::array::from_fn(|_| None);
    ENCODED.with_borrow_mut(|encoded| {
        encoded.clear();
        transport::encode(encoded, cmd);
        for (index, (slot, node)) in waiting.iter_mut().zip(nodes).enumerate() {
            let pending = node.send_encoded(cmd, encoded);
            if node.votes() {
                *slot = Some(pending);
            } else {
                // Sent all the same (a release must reach it too); only its answer does not count.
                drop(pending);
                tally.record(index, Vote::Failed(NodeError::Quarantined));
            }
        }
    });
    let mut timer = pin!(tokio::time::sleep_until(deadline));
    poll_fn(|cx| {
        let mut open = 0;
        for (index, slot) in waiting.iter_mut().enumerate() {
            let Some(pending) = slot else { continue };
            match Pin::new(pending).poll(cx) {
                Poll::Ready(reply) => {
                    *slot = None;
                    if tally.record(index, read(reply)) != Decision::Open && early {
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
            for (index, slot) in waiting.iter_mut().enumerate() {
                if slot.take().is_some() {
                    tally.record(index, Vote::Failed(NodeError::Timeout));
                }
            }
            return Poll::Ready(());
        }
        Poll::Pending
    })
    .await;
    tally
}
