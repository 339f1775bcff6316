//! A cluster shard's side of redirects: the connection hands a `MOVED`, `ASK` or `TRYAGAIN` answer,
//! with the command and its waiters, to its [`Router`] (`crate::transport::cluster`), and takes
//! commands the router forwards to it from another shard's connection.
//!
//! Why handing the command on is never a replay: those three answers come from the server's
//! command dispatch *before* the command runs (Redis checks the key's slot, then executes), so the
//! command did not run where it was answered so. The reader does this, not the waiter, so a
//! fire-and-forget release follows its slot too. A command lost with its connection is never
//! forwarded: it fails like any other (the reader only forwards what a live connection answered).
//!
//! Why a forwarded reply may be muted: the fan-out judged the vote of the shard the slot map named
//! when the round was sent. A reply from another shard counts only if that one votes when the reply
//! arrives ([`Route::redirected`]): a quarantined new master or a jumped clock gives no vote, as if
//! the round had been routed to it in the first place.

use std::sync::atomic::Ordering;
use std::sync::Weak;

use tokio::sync::oneshot;

use super::slot::Route;
use super::{PipelineNode, Shared, Slot};
use crate::error::NodeError;
use crate::protocol::cmd::{Cmd, NodeResult};
use crate::transport::resp::{encode_args, encode_cmd};

/// Where a shard's connection sends the commands a server redirected (implemented by the cluster
/// router; held weakly, so a connection never keeps its router alive).
pub(crate) trait Router: Send + Sync + std::fmt::Debug {
    /// `cmd` was answered `why` (`MOVED ...`, `ASK ...`, `TRYAGAIN ...`): it did not run. Send it
    /// where that says, with the same waiters, or fail them.
    fn redirect(&self, why: &str, cmd: Cmd, waiters: Waiters, route: Route);
}

/// Who waits for a forwarded command's reply: one caller, or a coalesced release's members.
#[derive(Debug)]
pub(crate) enum Waiters {
    One(oneshot::Sender<NodeResult>),
    Group(Vec<oneshot::Sender<NodeResult>>),
}

impl Waiters {
    /// Fails every waiter with `cause`.
    pub(crate) fn fail(self, cause: NodeError) {
        match self {
            Self::One(tx) => {
                let _ = tx.send(Err(cause));
            }
            Self::Group(group) => {
                for tx in group {
                    let _ = tx.send(Err(cause.clone()));
                }
            }
        }
    }
}

/// The failure of a command whose `ASKING` the server refused (`refused`, e.g. a lock user without
/// `+asking`) and which was then answered `why` (the `MOVED` back to the migration's source).
///
/// Why not follow it: without the flag the target does not serve the migrating slot and sends the
/// command back to the source, which answers `ASK` again; followed, it would bounce to the hop bound
/// and fail as "the members disagree", hiding the reason. The command did not run (a redirect), so
/// failing its vote with the server's own answer is safe and says what to grant.
pub(super) fn asking_refused(
    addr: &impl std::fmt::Display,
    refused: &NodeError,
    why: &str,
) -> NodeError {
    let refused = match refused {
        NodeError::Server(answer) => answer.clone(),
        other => other.to_string(),
    };
    NodeError::Server(format!(
        "{addr}: ASKING refused ({refused}): a command for a migrating slot cannot follow its ASK \
         (not run; answered {why})"
    ))
}

/// Whether `e` is a server's redirect (the command did not run there).
pub(super) fn redirect_of(e: &NodeError) -> Option<&str> {
    match e {
        NodeError::Server(why)
            if why.starts_with("MOVED ")
                || why.starts_with("ASK ")
                || why.starts_with("TRYAGAIN") =>
        {
            Some(why)
        }
        _ => None,
    }
}

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
            st.pending.push_back(Slot {
                asking: true,
                ..Slot::plain(None, None)
            });
            st.queued += 1;
            st.unsent += 1;
        }
        encode_cmd(&mut st.out, cmd, eval_source);
        let (tx, group) = match waiters {
            Waiters::One(tx) => (Some(tx), Vec::new()),
            Waiters::Group(group) => (None, group),
        };
        st.pending.push_back(Slot {
            group,
            route: Route {
                redirected: true,
                ..route
            },
            ..Slot::plain(tx, Some(cmd.clone()))
        });
        st.queued += 1;
        st.unsent += 1;
        self.backlog.store(st.pending.len(), Ordering::Relaxed);
        drop(st);
        if wake {
            self.wake_writer.notify_one();
        }
    }
}
