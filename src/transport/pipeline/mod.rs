//! The engine's own connection to one node: one TCP stream, every queued command written in one go,
//! replies matched to requests in FIFO order.
//!
//! Why not a general client: a lock needs semantics general clients get wrong by default, and throughput
//! needs batching they do not do for scripts (see `ARCHITECTURE.md`, "Transport").
//! - **Batching.** Callers encode their command straight into one shared buffer under a short std mutex;
//!   the writer task swaps the whole buffer out and writes it with one `write_all`, so 64 concurrent lock
//!   cycles cost the node a handful of reads, not 64 packets.
//! - **No replay.** When the connection drops, every in-flight request fails with
//!   [`NodeError::ConnectionLost`](crate::error::NodeError::ConnectionLost) and the buffer is
//!   discarded; nothing is re-sent on the new connection.
//! - **Bounded input.** Replies are framed by `bounded`: a node that nests too deep, declares or sends a
//!   reply over `max_reply_size`, sends something that is not RESP2, or answers a request not yet sent
//!   has its connection closed; the requests on it fail with a
//!   [`NodeError::Protocol`](crate::error::NodeError::Protocol) naming the node and the bound, which
//!   also stays the node's last error until it reconnects (with backoff).
//! - **Fail fast.** While disconnected, requests fail at once with
//!   [`NodeError::Disconnected`](crate::error::NodeError::Disconnected); a full queue fails with
//!   [`NodeError::Backpressure`](crate::error::NodeError::Backpressure). Reconnects run in the
//!   background with exponential backoff and jitter, so a dead node never blocks a caller.
//!
//! Files: this one (the handle), `state` (what the handle and the connection's tasks share),
//! `queue` (queueing a request), `node` (its `NodeClient` side), `outbox` (bytes on their way to
//! the socket, written by the writer or by a thread without the runtime), `write` (the writer),
//! `read` (reader), `life` (install, failure, reconnects), `request` (a request's place), `clock`
//! (the clock guard's `TIME`s), `coalesce` (back-to-back releases as one call), `redirect` (a
//! cluster shard's `MOVED`/`ASK` handed to its router), `forward` (commands a redirect sent here).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU8, AtomicUsize};
use std::sync::{Arc, Mutex, Weak};

use bytes::BytesMut;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::connect::open;
use super::ConnectOptions;
use crate::addr::NodeAddr;
use crate::algo::clock::ClockWatch;
use crate::algo::quarantine::Quarantine;
use crate::algo::rtt::RttEstimate;
use crate::protocol::server::Profile;
use tokio::time::Instant;

mod clock;
mod coalesce;
mod forward;
mod life;
mod node;
mod outbox;
mod queue;
mod read;
pub(crate) mod redirect;
mod request;
mod state;
mod write;
use life::reconnect_loop;
pub(crate) use request::Route;
use state::{Outbox, Shared, State};

/// A handle on one node's pipelined connection. Dropping it stops the connection's tasks.
#[derive(Debug)]
pub(crate) struct PipelineNode {
    shared: Arc<Shared>,
}

impl PipelineNode {
    /// Connects (bounded by `connect_timeout`); on failure starts disconnected and reconnects in the
    /// background.
    pub(crate) async fn connect(addr: NodeAddr, opts: &ConnectOptions) -> Self {
        Self::connect_with(addr, opts, None).await
    }

    /// [`connect`](Self::connect) for one master of a cluster: `MOVED`/`ASK` answers go to `router`.
    pub(crate) async fn connect_shard(
        addr: NodeAddr,
        opts: &ConnectOptions,
        router: Weak<dyn redirect::Router>,
    ) -> Self {
        Self::connect_with(addr, opts, Some(router)).await
    }

    async fn connect_with(
        addr: NodeAddr,
        opts: &ConnectOptions,
        router: Option<Weak<dyn redirect::Router>>,
    ) -> Self {
        let shared = Arc::new(Shared {
            addr,
            opts: opts.clone(),
            state: Mutex::new(State {
                connected: false,
                last_error: None,
                generation: 0,
                out: BytesMut::with_capacity(16 * 1024),
                pending: VecDeque::new(),
                group: None,
                queued: 0,
                answered: 0,
                probe: None,
                last_reply: None,
                last_sample: Instant::now(),
                sampled: false,
                time_refused: false,
                unsent: 0,
                backoff: opts.reconnect_min,
                connected_at: std::time::Instant::now(),
                conn_token: CancellationToken::new(),
                profile: Profile::default(),
            }),
            outbox: Mutex::new(Outbox::new()),
            wake_writer: Notify::new(),
            quarantine: Quarantine::new(opts.quarantine),
            clock: ClockWatch::new(opts.clock_guard),
            rtt: RttEstimate::default(),
            backlog: AtomicUsize::new(0),
            profile: AtomicU8::new(Profile::default().code()),
            shutdown: CancellationToken::new(),
            router,
        });
        let began = Instant::now();
        match open(&shared.addr, &shared.opts, true).await {
            Ok((stream, identity)) => {
                shared.rtt.seed(began.elapsed());
                shared.install(stream, identity)
            }
            Err(e) => {
                shared.lock().last_error = Some(e);
                tokio::spawn(reconnect_loop(shared.clone(), opts.reconnect_min));
            }
        }
        Self { shared }
    }
}

impl Drop for PipelineNode {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}
