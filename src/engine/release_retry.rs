//! Releases are not dropped: a release that did not reach a node (timeout, disconnect, full queue,
//! connection lost with it in flight) is sent again in the background until that node answers or the
//! lock's keys must have expired anyway.
//!
//! Why it is safe to send a release twice: the release scripts are compare-and-delete on the lock's
//! random value, which no other lock ever has; a second copy finds the key gone (or someone else's
//! value) and does nothing. It is not a *lock* command, so "never replay after a reconnect" does not
//! forbid it: re-sending a `SET NX` could grant a lock nobody waits for, re-sending a release only frees
//! what is ours.
//!
//! Why it matters: a key left on a majority blocks its resource for the rest of its TTL (10 s by
//! default) — under overload or a blip that is thousands of resources. The caller still gets the
//! round's own truthful result at once; this only finishes the job.
//!
//! One task per engine, fed through a channel: the fire-and-forget releases (a failed attempt, a
//! dropped acquire or lock) hand over their reply futures, a release round hands over the nodes it
//! could not confirm. The task holds the node handles until its last job ends (at most one TTL).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::error::NodeError;
use crate::observe;
use crate::protocol::cmd::Cmd;
use crate::transport::{NodeClient, Pending};

/// First pause before a re-send; doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
/// Longest pause between re-sends: a node back from an outage is cleaned within this.
const MAX_BACKOFF: Duration = Duration::from_millis(250);

/// The engine's handle on its release re-sender.
#[derive(Debug)]
pub(crate) struct ReleaseRetry {
    jobs: mpsc::UnboundedSender<Job>,
    /// Copies submitted and not yet settled (`redlock_background_releases_pending`).
    pending: Arc<AtomicUsize>,
}

struct Job {
    node: Arc<dyn NodeClient>,
    cmd: Cmd,
    /// The reply of the copy already sent, if any (`None`: it is known to have failed).
    pending: Option<Pending>,
    /// After this the keys have expired on their own: stop.
    until: Instant,
}

impl ReleaseRetry {
    /// Starts the task (on the current runtime).
    pub(crate) fn start() -> Self {
        let (jobs, rx) = mpsc::unbounded_channel();
        let pending = Arc::new(AtomicUsize::new(0));
        tokio::spawn(run(rx, pending.clone()));
        Self { jobs, pending }
    }

    /// Release copies submitted and not yet settled (landed, or given up at the keys' expiry).
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    /// Queues `cmd` (a release) on every node now, and makes sure each copy lands.
    pub(crate) fn fire(&self, nodes: &[Arc<dyn NodeClient>], cmd: &Cmd, until: Instant) {
        self.fire_except(nodes, 0, cmd, until);
    }

    /// [`fire`](Self::fire), but not to the nodes in `skip` (bit = node index): those a lost
    /// round's replies showed hold nothing of ours.
    pub(crate) fn fire_except(
        &self,
        nodes: &[Arc<dyn NodeClient>],
        skip: u16,
        cmd: &Cmd,
        until: Instant,
    ) {
        for (index, node) in nodes.iter().enumerate() {
            if skip & (1 << index) == 0 {
                self.submit(Job {
                    node: node.clone(),
                    cmd: cmd.clone(),
                    pending: Some(node.send(cmd)),
                    until,
                });
            }
        }
    }

    /// A release round could not confirm `node` because of `cause`: send it again if the cause
    /// means the command may not have run.
    pub(crate) fn resend(
        &self,
        node: &Arc<dyn NodeClient>,
        cmd: &Cmd,
        cause: &NodeError,
        until: Instant,
    ) {
        if transient(cause) {
            self.submit(Job {
                node: node.clone(),
                cmd: cmd.clone(),
                pending: None,
                until,
            });
        }
    }

    fn submit(&self, job: Job) {
        // Counted before the task can see it: the task's decrement for a job that settles at once
        // must not find the count still at zero (it would wrap, and `Redlock::shutdown` would wait
        // out its bound for a count it can never see fall). The task lives as long as this sender:
        // a send can only fail while the runtime shuts down, and then nothing could be sent anyway.
        self.pending.fetch_add(1, Ordering::Relaxed);
        if self.jobs.send(job).is_err() {
            self.pending.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Whether a failure means the release may not have run on the node.
fn transient(cause: &NodeError) -> bool {
    matches!(
        cause,
        NodeError::Timeout
            | NodeError::Disconnected
            | NodeError::ConnectionLost
            | NodeError::Backpressure
            | NodeError::Connect(_)
    )
}

async fn run(mut rx: mpsc::UnboundedReceiver<Job>, pending: Arc<AtomicUsize>) {
    let mut jobs = FuturesUnordered::new();
    loop {
        tokio::select! {
            job = rx.recv() => match job {
                Some(job) => jobs.push(settle(job)),
                None => break,
            },
            Some(()) = jobs.next(), if !jobs.is_empty() => {
                pending.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
    // The engine is gone; finish what is in flight (each job ends by its `until`).
    while jobs.next().await.is_some() {}
}

/// Waits for one node's copy; re-sends with backoff while it fails transiently and time remains.
async fn settle(job: Job) {
    let Job {
        node,
        cmd,
        mut pending,
        until,
    } = job;
    let mut backoff = FIRST_BACKOFF;
    let mut resent = false;
    loop {
        let failed = match pending.take() {
            Some(reply) => matches!(reply.await, Err(ref e) if transient(e)),
            None => true,
        };
        if !failed {
            if resent {
                observe::release_retry("done");
            }
            return;
        }
        if Instant::now() + backoff >= until {
            observe::release_retry("expired");
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
        observe::release_retry("sent");
        resent = true;
        pending = Some(node.send(&cmd));
    }
}
