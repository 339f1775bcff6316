//! Commands a redirect sent to a cluster shard's connection (see `redirect`): queued here behind
//! an `ASKING` where an `ASK` said so, their replies muted where this connection does not vote.
//!
//! Why a forwarded reply may be muted: the fan-out judged the vote of the shard the slot map named
//! when the round was sent. A reply from another shard counts only if that one votes when the reply
//! arrives ([`Route::redirected`]): a quarantined new master or a jumped clock gives no vote, as if
//! the round had been routed to it in the first place.

use std::sync::Weak;

use super::redirect::{Router, Waiters};
use super::request::{Request, Route};
use super::state::Shared;
use super::PipelineNode;
use crate::error::NodeError;
use crate::protocol::cmd::{Cmd, NodeResult};
use crate::transport::resp::{encode_args, encode_cmd};

impl PipelineNode {
    /// Queues a command a redirect sent here: after `ASKING` when `asking` (the two back to back,
    /// under one lock, so nothing comes between them). Never coalesced or pre-encoded. On a node
    /// that is down or full, the waiters fail at once with why.
    pub(crate) fn forward(&self, cmd: &Cmd, waiters: Waiters, route: Route, asking: bool) {
        self.shared
            .forward_on(0, cmd, false, waiters, route, asking);
    }

    /// This connection's server became a master of slots it did not serve before (a failover
    /// promoted it): it may lack the last writes its old master acknowledged, so no vote for one
    /// maximum lifetime from now (no-op with quarantine off).
    pub(crate) fn quarantine_now(&self) {
        self.shared.quarantine.quarantine_now();
    }
}

impl Shared {
    /// The router this shard's connection forwards redirects to, while it lives.
    pub(super) fn router(&self) -> Option<std::sync::Arc<dyn Router>> {
        self.router.as_ref().and_then(Weak::upgrade)
    }

    /// Whether this connection votes now (quarantine and clock guard).
    pub(super) fn votes_now(&self) -> bool {
        self.quarantine.votes() && self.clock.votes()
    }

    /// `reply` as it may count: muted for a forwarded command if this connection does not vote now.
    pub(super) fn muted(&self, route: Route, reply: NodeResult) -> NodeResult {
        if !route.redirected || self.votes_now() {
            return reply;
        }
        Err(if self.clock.votes() {
            NodeError::Quarantined
        } else {
            NodeError::ClockJump
        })
    }

    /// [`PipelineNode::forward`] onto connection `generation` (0: whichever is current);
    /// `eval_source` for a `NOSCRIPT` resend of a forwarded command.
    pub(super) fn forward_on(
        &self,
        generation: u64,
        cmd: &Cmd,
        eval_source: bool,
        waiters: Waiters,
        route: Route,
        asking: bool,
    ) {
        let mut st = self.lock();
        let refused = if !st.connected {
            Some(st.last_error.clone().unwrap_or(NodeError::Disconnected))
        } else if generation != 0 && st.generation != generation {
            Some(NodeError::ConnectionLost)
        } else if st.pending.len() >= self.opts.max_pending {
            Some(NodeError::Backpressure)
        } else {
            None
        };
        if let Some(cause) = refused {
            drop(st);
            return waiters.fail(cause);
        }
        let wake = st.out.is_empty() && st.group.is_none();
        super::coalesce::close(&mut st);
        if self.clock.enabled() && !eval_source && cmd.is_acquire() && !st.sampled {
            // Before `ASKING`: any command between it and the acquire would clear its flag.
            super::clock::queue_sample(&mut st);
        }
        if asking {
            encode_args(&mut st.out, &[b"ASKING"]);
            st.push(Request {
                asking: true,
                ..Request::plain(None, None)
            });
        }
        encode_cmd(&mut st.out, cmd, eval_source);
        let (tx, group) = match waiters {
            Waiters::One(tx) => (Some(tx), Vec::new()),
            Waiters::Group(group) => (None, group),
        };
        st.push(Request {
            group,
            route: Route {
                redirected: true,
                ..route
            },
            ..Request::plain(tx, Some(cmd.clone()))
        });
        self.end_queueing(st, wake);
    }
}
