//! A cluster shard's side of redirects: the connection hands a `MOVED`, `ASK` or `TRYAGAIN` answer,
//! with the command and its waiters, to its [`Router`] (`crate::transport::cluster`), and takes
//! commands the router forwards to it from another shard's connection (`forward`).
//!
//! Why handing the command on is never a replay: those three answers come from the server's
//! command dispatch *before* the command runs (Redis checks the key's slot, then executes), so the
//! command did not run where it was answered so. The reader does this, not the waiter, so a
//! fire-and-forget release follows its slot too. A command lost with its connection is never
//! forwarded: it fails like any other (the reader only forwards what a live connection answered).

use tokio::sync::oneshot;

use super::request::Route;
use crate::error::NodeError;
use crate::protocol::cmd::{Cmd, NodeResult};

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
