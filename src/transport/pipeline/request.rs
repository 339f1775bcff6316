//! One request's place in a pipelined connection's queue ([`Request`]), and how it reached the
//! connection ([`Route`]).

use tokio::time::Instant;

use tokio::sync::oneshot;

use crate::error::NodeError;
use crate::protocol::cmd::{Cmd, NodeResult};
use crate::protocol::native::Native;

/// One request written or queued on the connection.
#[derive(Debug)]
pub(super) struct Request {
    /// Who waits for the reply; `None` for the clock guard's `TIME`, which only the reader reads, and
    /// for a coalesced release, whose waiters are `group`.
    pub(super) tx: Option<oneshot::Sender<NodeResult>>,
    /// A coalesced release's waiters, one per lock in the order of the call's keys (`coalesce`).
    pub(super) group: Vec<oneshot::Sender<NodeResult>>,
    /// For the clock guard's `TIME` (sent just before an acquire): when it was queued. The reader
    /// judges its reply itself, before it completes the acquire behind it.
    pub(super) clock: Option<Instant>,
    /// For scripts: the command again, to resend as `EVAL` if the node answers `NOSCRIPT`. The reader
    /// does this, not the waiter, so fire-and-forget releases recover too. On a cluster shard's
    /// connection every command keeps it, to be sent where a `MOVED`/`ASK` says (see `redirect`).
    pub(super) script: Option<Cmd>,
    /// How a cluster shard's connection got this command: redirected how many times, and whether
    /// its reply must be muted if this connection does not vote when it arrives (see `redirect`).
    pub(super) route: Route,
    /// A native form's reply reading: on its last command's slot (the reader hands the form every
    /// reply of its commands, see `crate::protocol::native`); the slots before it have `held`.
    pub(super) native: Option<Native>,
    /// One of a native form's commands but its last: the reader keeps the reply for the last.
    pub(super) held: bool,
    /// The `ASKING` queued before a command an `ASK` sent here (`redirect`): its reply is judged by
    /// the reader for the command behind it.
    pub(super) asking: bool,
}

impl Request {
    /// A slot for a plain request (`tx` its waiter, `script` its command if it may be resent).
    pub(super) fn plain(tx: Option<oneshot::Sender<NodeResult>>, script: Option<Cmd>) -> Self {
        Self {
            tx,
            group: Vec::new(),
            clock: None,
            script,
            native: None,
            held: false,
            asking: false,
            route: Route::DIRECT,
        }
    }
}

/// How a command reached this connection (cluster shards only; [`Route::DIRECT`] otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Route {
    /// `MOVED`/`ASK`/`TRYAGAIN` answers followed so far (bounded by the cluster router).
    pub(crate) hops: u8,
    /// Sent here by a redirect: the fan-out judged the vote of the shard it first routed to, so
    /// the reply is muted ([`NodeError::Quarantined`] or [`NodeError::ClockJump`]) if this
    /// connection does not vote when it arrives.
    pub(crate) redirected: bool,
}

impl Route {
    /// Sent where the slot map said, not redirected.
    pub(crate) const DIRECT: Self = Self {
        hops: 0,
        redirected: false,
    };
}

impl Request {
    /// Fails every waiter of this request with `cause`.
    pub(super) fn fail(self, cause: &NodeError) {
        for tx in self.tx.into_iter().chain(self.group) {
            let _ = tx.send(Err(cause.clone()));
        }
    }
}
