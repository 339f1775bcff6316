//! Queueing a request: encoded into `State::out` under the state lock, a slot at the back of
//! `State::pending` for its reply, the writer woken by the first command of a batch. Also a native
//! form's follow-ups (`crate::protocol::native`): a native form sends one command per reply it
//! reads, each with a slot of its own, so the reader's one-reply-per-slot order holds.

use tokio::sync::oneshot;

use super::request::Request;
use super::state::{Shared, State};
use super::{clock, coalesce};
use crate::error::NodeError;
use crate::protocol::cmd::{Cmd, NodeResult};
use crate::protocol::native::Native;
use crate::protocol::server::Profile;
use crate::transport::resp::{encode_cmd, encode_native};

impl Shared {
    /// Encodes `cmd` into the output buffer and registers `tx` for its reply.
    pub(super) fn enqueue(
        &self,
        cmd: &Cmd,
        eval_source: bool,
        tx: oneshot::Sender<NodeResult>,
    ) -> Result<(), NodeError> {
        self.enqueue_on(0, cmd, eval_source, tx)
    }

    /// [`enqueue`](Self::enqueue), but only onto connection `generation` (0: whichever is current).
    pub(super) fn enqueue_on(
        &self,
        generation: u64,
        cmd: &Cmd,
        eval_source: bool,
        tx: oneshot::Sender<NodeResult>,
    ) -> Result<(), NodeError> {
        self.enqueue_inner(generation, cmd, eval_source, None, tx)
    }

    /// Enqueues `cmd` whose `EVALSHA`/`SET` form the caller has already encoded.
    pub(super) fn enqueue_frame(
        &self,
        cmd: &Cmd,
        encoded: Option<(&[u8], Profile)>,
        tx: oneshot::Sender<NodeResult>,
    ) -> Result<(), NodeError> {
        self.enqueue_inner(0, cmd, false, encoded, tx)
    }

    fn enqueue_inner(
        &self,
        generation: u64,
        cmd: &Cmd,
        eval_source: bool,
        encoded: Option<(&[u8], Profile)>,
        tx: oneshot::Sender<NodeResult>,
    ) -> Result<(), NodeError> {
        // A release that may join the open group is not encoded now (see `coalesce`).
        let member = (!eval_source)
            .then(|| coalesce::member(&self.opts, cmd))
            .flatten();
        // A clone of a script command is a refcount and 20 bytes; done before taking the lock. A
        // cluster shard keeps every command, to forward it if the server redirects it.
        let keep = self.router.is_some() || (!eval_source && cmd.script().is_some());
        let mut script = (member.is_none() && keep).then(|| cmd.clone());
        let mut st = self.lock();
        // This connection's server may take the operation as native commands (never a resend's
        // `EVAL`: that is a script the node lost).
        let native = (!eval_source).then(|| st.profile.render(cmd)).flatten();
        let member = member.filter(|_| native.is_none() && st.profile.coalesces_releases());
        if native.is_some() {
            script = None;
        }
        if !st.connected {
            return Err(st.last_error.clone().unwrap_or(NodeError::Disconnected));
        }
        if generation != 0 && st.generation != generation {
            return Err(NodeError::Disconnected);
        }
        if st.pending.len() >= self.opts.max_pending {
            return Err(NodeError::Backpressure);
        }
        // An open group means the writer was already woken for it.
        let wake = st.out.is_empty() && st.group.is_none();
        if let Some(member) = member {
            coalesce::join(&mut st, member, tx, self.router.is_some());
        } else {
            // Anything else closes the open group first: the wire keeps the order of the calls.
            coalesce::close(&mut st);
            if self.clock.enabled() && !eval_source && cmd.is_acquire() && !st.sampled {
                // In the same write as the acquire and answered before it: a jump this sample shows
                // stops the node's vote before the acquire's reply can count. One per write, not per
                // acquire: the node runs a write's commands back to back, so the sample is as close
                // to every acquire behind it as one of its own would be (see `clock`).
                clock::queue_sample(&mut st);
            }
            // A frame rendered for another profile (the node reconnected to another server since
            // the round read it) is rendered again for this connection's.
            let profile = st.profile;
            match (encoded, &native) {
                (Some((frame, at)), _) if at == profile => st.out.extend_from_slice(frame),
                (_, Some(native)) => encode_native(&mut st.out, native),
                (_, None) => encode_cmd(&mut st.out, cmd, eval_source),
            }
            match native {
                Some(native) => push_native(&mut st, native, Some(tx)),
                None => st.push(Request::plain(Some(tx), script)),
            }
        }
        self.end_queueing(st, wake);
        Ok(())
    }

    /// Queues a native form's follow-up (`crate::protocol::native::Answer`) on connection
    /// `generation` only: a new command, never one sent again. If that connection is gone, `tx`
    /// fails with [`NodeError::ConnectionLost`], like any request lost with its connection.
    pub(super) fn enqueue_native(
        &self,
        generation: u64,
        native: Native,
        tx: Option<oneshot::Sender<NodeResult>>,
    ) {
        let mut st = self.lock();
        if !st.connected || st.generation != generation {
            drop(st);
            if let Some(tx) = tx {
                let _ = tx.send(Err(NodeError::ConnectionLost));
            }
            return;
        }
        let wake = st.out.is_empty() && st.group.is_none();
        coalesce::close(&mut st);
        encode_native(&mut st.out, &native);
        push_native(&mut st, native, tx);
        self.end_queueing(st, wake);
    }
}

/// Registers the slots of a native form already encoded into `st.out`: one per command, the last
/// one reading them all.
fn push_native(st: &mut State, native: Native, tx: Option<oneshot::Sender<NodeResult>>) {
    let parts = native.parts();
    for _ in 1..parts {
        st.push(Request {
            held: true,
            ..Request::plain(None, None)
        });
    }
    st.push(Request {
        native: Some(native),
        ..Request::plain(tx, None)
    });
}
