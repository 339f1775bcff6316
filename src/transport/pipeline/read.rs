//! The reader of one pipelined connection: bounded framing, replies matched to requests in FIFO order,
//! `NOSCRIPT` handled once.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::redirect::{asking_refused, redirect_of, Waiters};
use super::request::Request;
use super::state::Shared;
use crate::error::NodeError;
use crate::protocol::cmd::{Cmd, NodeResult};
use crate::protocol::native::Answer;
use crate::transport::bounded::Framer;
use crate::transport::resp::is_noscript;

pub(super) async fn read_loop<R: AsyncRead + Unpin>(
    shared: Arc<Shared>,
    mut rd: R,
    generation: u64,
    token: CancellationToken,
) {
    let mut framer = Framer::new(shared.opts.limits);
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut replies = Vec::new();
    let mut slots = Vec::new();
    // The replies of a native form's commands before its last (see `Request::held`).
    let mut held = Vec::new();
    // A refused `ASKING`, for the command queued right behind it (see `Request::asking`).
    let mut refused_asking = None;
    loop {
        let read = tokio::select! {
            _ = token.cancelled() => return,
            r = rd.read_buf(&mut buf) => r,
        };
        if !matches!(read, Ok(n) if n > 0) {
            return shared.fail(generation, NodeError::ConnectionLost);
        }
        // Bounded (see `bounded`): a node cannot make this recurse or buffer past `limits`.
        loop {
            match framer.next_reply(&mut buf) {
                Ok(Some(reply)) => replies.push(reply),
                Ok(None) => break,
                Err(broken) => return shared.fail(generation, broken.node_error(&shared.addr)),
            }
        }
        if replies.is_empty() {
            continue;
        }
        {
            let now = Instant::now();
            let mut st = shared.lock();
            if st.generation != generation {
                return;
            }
            st.last_reply = Some(now);
            // Only requests already handed to the writer can have replies.
            let answerable = st.pending.len() - st.unsent;
            for _ in 0..replies.len().min(answerable) {
                match st.pending.pop_front() {
                    Some(tx) => slots.push(tx),
                    None => break,
                }
            }
            st.answered += slots.len() as u64;
            shared.backlog.store(st.pending.len(), Ordering::Relaxed);
            if let Some((last, sent)) = st.probe {
                if st.answered >= last {
                    st.probe = None;
                    shared.rtt.sample(now.saturating_duration_since(sent));
                }
            }
        }
        if slots.len() < replies.len() {
            // More replies than requests: the stream is out of step and nothing on it can be trusted.
            // The slots taken fail with the rest.
            let cause = NodeError::Protocol(format!(
                "{}: reply with no request outstanding; connection closed",
                shared.addr
            ));
            for slot in slots.drain(..) {
                slot.fail(&cause);
            }
            return shared.fail(generation, cause);
        }
        // Complete outside the lock: waking a waiter may run it on another thread right away.
        for (slot, reply) in slots.drain(..).zip(replies.drain(..)) {
            complete(
                &shared,
                generation,
                slot,
                reply,
                &mut held,
                &mut refused_asking,
            );
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(16 * 1024);
        }
    }
}

/// Hands one reply to its request, resending a script once as `EVAL` on `NOSCRIPT`; a native form
/// reads all its commands' replies at its last one; a refused `ASKING` is kept in `refused_asking`
/// for the command behind it.
fn complete(
    shared: &Arc<Shared>,
    generation: u64,
    slot: Request,
    reply: NodeResult,
    held: &mut Vec<NodeResult>,
    refused_asking: &mut Option<NodeError>,
) {
    if let Some(sent) = slot.clock {
        return super::clock::judge(shared, sent, reply);
    }
    if slot.asking {
        // Its command is the very next slot: both were queued back to back under one lock.
        *refused_asking = reply.err();
        return;
    }
    let refused = refused_asking.take();
    if slot.held {
        return held.push(reply);
    }
    if let Some(native) = slot.native {
        held.push(reply);
        let answer = native.answer(&mut held.drain(..));
        held.clear();
        let tx = slot.tx;
        match answer {
            Answer::Done(result) => {
                if let Some(tx) = tx {
                    let _ = tx.send(result);
                }
            }
            Answer::Then(next) => shared.enqueue_native(generation, next, tx),
            Answer::DoneThen(result, next) => {
                if let Some(tx) = tx {
                    let _ = tx.send(result);
                }
                shared.enqueue_native(generation, next, None);
            }
        }
        return;
    }
    // A cluster shard: the server says the slot is served elsewhere, so the command did not run
    // here and the router sends it on (see `redirect`).
    if let Some(why) = reply.as_ref().err().and_then(redirect_of) {
        if let Some(refused) = refused {
            return slot.fail(&asking_refused(&shared.addr, &refused, why));
        }
        if let (Some(router), Some(cmd)) = (shared.router(), slot.script.clone()) {
            let waiters = match slot.tx {
                _ if !slot.group.is_empty() => Waiters::Group(slot.group),
                Some(tx) => Waiters::One(tx),
                None => return,
            };
            return router.redirect(why, cmd, waiters, slot.route);
        }
    }
    if !slot.group.is_empty() {
        return super::coalesce::answer(
            shared,
            generation,
            slot.group,
            slot.script,
            reply,
            slot.route,
        );
    }
    let Some(tx) = slot.tx else { return };
    match (
        &reply,
        slot.script.as_ref().and_then(|c| Some((c.script()?, c))),
    ) {
        // The script did not run (cache flushed or node restarted).
        (Err(e), Some((script, cmd))) if is_noscript(e) => {
            if script.resend && slot.route.redirected {
                // Forwarded here: the resend keeps its route (its reply may be muted).
                shared.forward_on(generation, cmd, true, Waiters::One(tx), slot.route, false);
            } else if script.resend {
                // Send its source once, on this connection only (if it has been replaced, `tx` is
                // dropped and the waiter sees ConnectionLost: never a replay).
                let _ = shared.enqueue_on(generation, cmd, true, tx);
            } else {
                let _ = tx.send(shared.muted(slot.route, reply));
                let (tx, _) = oneshot::channel();
                let _ = shared.enqueue_on(generation, &Cmd::ScriptLoad(script), false, tx);
            }
        }
        (_, _) => {
            let _ = tx.send(shared.muted(slot.route, reply));
        }
    }
}
