//! The engine's own connection to one node: one TCP stream, every queued command written in one go,
//! replies matched to requests in FIFO order.
//!
//! Why not a general client: a lock needs semantics general clients get wrong by default, and throughput
//! needs batching they do not do for scripts (see `ARCHITECTURE.md`, "Transport").
//! - **Batching.** Callers encode their command straight into one shared buffer under a short std mutex;
//!   the writer task swaps the whole buffer out and writes it with one `write_all`, so 64 concurrent lock
//!   cycles cost the node a handful of reads, not 64 packets.
//! - **No replay.** When the connection drops, every in-flight request fails with
//!   [`NodeError::ConnectionLost`] and the buffer is discarded; nothing is re-sent on the new connection.
//! - **Bounded input.** Replies are framed by `bounded`: a node that nests too deep, declares or sends a
//!   reply over `max_reply_size`, sends something that is not RESP2, or answers a request not yet sent
//!   has its connection closed; the requests on it fail with a [`NodeError::Protocol`] naming the node
//!   and the bound, which also stays the node's last error until it reconnects (with backoff).
//!
//! Files: this one (handle, request queue), `node` (its `NodeClient` side), `outbox` (bytes on
//! their way to the socket, written by the writer or by a thread without the runtime), `write`
//! (the writer), `read` (reader), `life` (install, failure, reconnects), `slot` (a request's
//! place), `clock` (the clock guard's `TIME`s), `coalesce` (back-to-back releases as one call),
//! `redirect` (a cluster shard's `MOVED`/`ASK`).
//! - **Fail fast.** While disconnected, requests fail at once with [`NodeError::Disconnected`]; a full queue
//!   fails with [`NodeError::Backpressure`]. Reconnects run in the background with exponential backoff and
//!   jitter, so a dead node never blocks a caller.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use bytes::BytesMut;
use tokio::sync::{oneshot, Notify};
use tokio_util::sync::CancellationToken;

use super::connect::{open, Stream};
use super::resp::{encode_cmd, encode_native};
use super::ConnectOptions;
use crate::addr::NodeAddr;
use crate::algo::clock::ClockWatch;
use crate::algo::quarantine::Quarantine;
use crate::algo::rtt::RttEstimate;
use crate::error::NodeError;
use crate::protocol::cmd::{Cmd, NodeResult};
use crate::protocol::server::Profile;
use tokio::time::Instant;

mod clock;
mod coalesce;
mod life;
mod node;
mod outbox;
mod read;
pub(crate) mod redirect;
mod slot;
mod write;
use life::reconnect_loop;
pub(crate) use slot::Route;
use slot::{push_native, Slot};

/// A handle on one node's pipelined connection. Dropping it stops the connection's tasks.
#[derive(Debug)]
pub(crate) struct PipelineNode {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    addr: NodeAddr,
    opts: ConnectOptions,
    state: Mutex<State>,
    /// What the writer has taken from `State::out` and the socket has not (see `outbox`).
    outbox: Mutex<outbox::Outbox>,
    wake_writer: Notify,
    /// Whether this node votes, from the identity each (re)connect reads.
    quarantine: Quarantine,
    /// The clock-jump guard's view of the node's clock (`TIME` before each acquire).
    clock: ClockWatch,
    /// Round-trip estimate: one sample per written batch (see `State::probe`).
    rtt: RttEstimate,
    /// `State::pending.len()`, readable without the lock (admission control looks at it per round).
    backlog: AtomicUsize,
    /// `State::profile`'s code, readable without the lock (the fan-out asks it per node per round).
    profile: AtomicU8,
    /// Cancelled when the handle is dropped: stops the reader, writer and reconnect loop.
    shutdown: CancellationToken,
    /// A cluster shard's connection: where `MOVED`/`ASK` answers go (`redirect`); `None`: standalone.
    router: Option<Weak<dyn redirect::Router>>,
}

#[derive(Debug)]
struct State {
    connected: bool,
    /// Why the last connect failed (names the node): what requests fail with while disconnected, so
    /// "wrong password" or "TLS handshake failed" reaches the caller instead of a bare "not connected".
    last_error: Option<NodeError>,
    /// Bumped on every new connection, so tasks of an old connection cannot touch the new one.
    generation: u64,
    /// Encoded commands not yet handed to the writer.
    out: BytesMut,
    /// One slot per command written or queued, in wire order.
    pending: VecDeque<Slot>,
    /// Releases queued back to back, not yet encoded: the last slot of `pending` is theirs (see
    /// `coalesce`).
    group: Option<coalesce::Group>,
    /// Commands ever queued / answered on this connection: positions in the wire order.
    queued: u64,
    answered: u64,
    /// The RTT probe in flight: the position of the last command of a written batch and when the
    /// batch was handed to the socket. Its reply completes the sample. One at a time: two clock reads
    /// per batch, none per command.
    probe: Option<(u64, Instant)>,
    /// When the reader last handed out replies: the node is alive and answering in order.
    last_reply: Option<Instant>,
    /// When the clock guard's last `TIME` was queued (see `clock::IDLE_SAMPLE`).
    last_sample: Instant,
    /// A clock-guard `TIME` is in `out`, not yet handed to the writer: the acquires queued behind it
    /// go out in the same write and are answered after it, so they need no `TIME` of their own.
    sampled: bool,
    /// This connection's node refused a `TIME` (already said in the log).
    time_refused: bool,
    /// How many of the last `pending` slots are still in `out`, not yet handed to the writer: a reply
    /// cannot be theirs, so a node that answers them is out of step (or hostile), not fast.
    unsent: usize,
    /// The next reconnect delay: doubles while connections fail soon after opening (a node that passes
    /// the handshake and then breaks a bound must not get a reconnect every 20 ms).
    backoff: std::time::Duration,
    /// When the current connection was installed.
    connected_at: std::time::Instant,
    /// Cancels the current connection's reader and writer.
    conn_token: CancellationToken,
    /// How the current connection renders operations (what its handshake learned of the server).
    profile: Profile,
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
            outbox: Mutex::new(outbox::Outbox::new()),
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

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-update of plain buffers; keep going.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Encodes `cmd` into the output buffer and registers `tx` for its reply.
    fn enqueue(
        &self,
        cmd: &Cmd,
        eval_source: bool,
        tx: oneshot::Sender<NodeResult>,
    ) -> Result<(), NodeError> {
        self.enqueue_on(0, cmd, eval_source, tx)
    }

    /// [`enqueue`](Self::enqueue), but only onto connection `generation` (0: whichever is current).
    fn enqueue_on(
        &self,
        generation: u64,
        cmd: &Cmd,
        eval_source: bool,
        tx: oneshot::Sender<NodeResult>,
    ) -> Result<(), NodeError> {
        self.enqueue_inner(generation, cmd, eval_source, None, tx)
    }

    /// Enqueues `cmd` whose `EVALSHA`/`SET` form the caller has already encoded.
    fn enqueue_frame(
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
        let native = (!eval_source).then(|| st.profile.native(cmd)).flatten();
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
                None => {
                    st.pending.push_back(Slot::plain(Some(tx), script));
                    st.queued += 1;
                    st.unsent += 1;
                }
            }
        }
        self.backlog.store(st.pending.len(), Ordering::Relaxed);
        drop(st);
        // The writer takes the whole buffer each time it wakes, so only the first command of a batch
        // needs to wake it; `notify_one` keeps a permit if the writer is busy writing.
        if wake {
            self.wake_writer.notify_one();
        }
        Ok(())
    }
}
