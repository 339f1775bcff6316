//! What one pipelined connection's handle and tasks (reader, writer, reconnect loop) share:
//! [`Shared`], holding the [`State`] under the state lock and the [`Outbox`] under the outbox lock
//! (lock order: see `outbox`), and the open [`Group`] of releases inside the state (see `coalesce`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, Weak};

use bytes::{Bytes, BytesMut};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::redirect::Router;
use super::request::Request;
use crate::addr::NodeAddr;
use crate::algo::clock::ClockWatch;
use crate::algo::quarantine::Quarantine;
use crate::algo::rtt::RttEstimate;
use crate::algo::value::LockValue;
use crate::error::NodeError;
use crate::protocol::cmd::Coalesced;
use crate::protocol::server::Profile;
use crate::transport::ConnectOptions;

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) addr: NodeAddr,
    pub(super) opts: ConnectOptions,
    pub(super) state: Mutex<State>,
    /// What the writer has taken from `State::out` and the socket has not (see `outbox`).
    pub(super) outbox: Mutex<Outbox>,
    pub(super) wake_writer: Notify,
    /// Whether this node votes, from the identity each (re)connect reads.
    pub(super) quarantine: Quarantine,
    /// The clock-jump guard's view of the node's clock (`TIME` before each acquire).
    pub(super) clock: ClockWatch,
    /// Round-trip estimate: one sample per written batch (see `State::probe`).
    pub(super) rtt: RttEstimate,
    /// `State::pending.len()`, readable without the lock (admission control looks at it per round).
    pub(super) backlog: AtomicUsize,
    /// `State::profile`'s code, readable without the lock (the fan-out asks it per node per round).
    pub(super) profile: AtomicU8,
    /// Cancelled when the handle is dropped: stops the reader, writer and reconnect loop.
    pub(super) shutdown: CancellationToken,
    /// A cluster shard's connection: where `MOVED`/`ASK` answers go (`redirect`); `None`: standalone.
    pub(super) router: Option<Weak<dyn Router>>,
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) connected: bool,
    /// Why the last connect failed (names the node): what requests fail with while disconnected, so
    /// "wrong password" or "TLS handshake failed" reaches the caller instead of a bare "not connected".
    pub(super) last_error: Option<NodeError>,
    /// Bumped on every new connection, so tasks of an old connection cannot touch the new one.
    pub(super) generation: u64,
    /// Encoded commands not yet handed to the writer.
    pub(super) out: BytesMut,
    /// One slot per command written or queued, in wire order.
    pub(super) pending: VecDeque<Request>,
    /// Releases queued back to back, not yet encoded: the last slot of `pending` is theirs (see
    /// `coalesce`).
    pub(super) group: Option<Group>,
    /// Commands ever queued / answered on this connection: positions in the wire order.
    pub(super) queued: u64,
    pub(super) answered: u64,
    /// The RTT probe in flight: the position of the last command of a written batch and when the
    /// batch was handed to the socket. Its reply completes the sample. One at a time: two clock reads
    /// per batch, none per command.
    pub(super) probe: Option<(u64, Instant)>,
    /// When the reader last handed out replies: the node is alive and answering in order.
    pub(super) last_reply: Option<Instant>,
    /// When the clock guard's last `TIME` was queued (see `clock::IDLE_SAMPLE`).
    pub(super) last_sample: Instant,
    /// A clock-guard `TIME` is in `out`, not yet handed to the writer: the acquires queued behind it
    /// go out in the same write and are answered after it, so they need no `TIME` of their own.
    pub(super) sampled: bool,
    /// This connection's node refused a `TIME` (already said in the log).
    pub(super) time_refused: bool,
    /// How many of the last `pending` slots are still in `out`, not yet handed to the writer: a reply
    /// cannot be theirs, so a node that answers them is out of step (or hostile), not fast.
    pub(super) unsent: usize,
    /// The next reconnect delay: doubles while connections fail soon after opening (a node that passes
    /// the handshake and then breaks a bound must not get a reconnect every 20 ms).
    pub(super) backoff: std::time::Duration,
    /// When the current connection was installed.
    pub(super) connected_at: std::time::Instant,
    /// Cancels the current connection's reader and writer.
    pub(super) conn_token: CancellationToken,
    /// How the current connection renders operations (what its handshake learned of the server).
    pub(super) profile: Profile,
}

/// The open group: releases queued back to back and not yet encoded. Its slot is the last one in
/// `State::pending`, holding one waiter per lock in the same order.
#[derive(Debug)]
pub(super) struct Group {
    pub(super) form: &'static Coalesced,
    /// A cluster shard's connection: sent in the any-slot form.
    pub(super) cluster: bool,
    pub(super) locks: Vec<(Bytes, LockValue)>,
}

/// The bytes on their way to the socket: see `outbox`.
pub(super) struct Outbox {
    /// The connection these bytes are for (`State::generation`).
    pub(super) generation: u64,
    /// Taken from `State::out`, not yet accepted by the socket.
    pub(super) buf: BytesMut,
    /// The connection's socket, a second handle on it (plain TCP on unix): written without the
    /// runtime. `None` on TLS (the session's state is inside the stream) and elsewhere.
    pub(super) direct: Option<std::net::TcpStream>,
}

impl Outbox {
    pub(super) fn new() -> Self {
        Self {
            generation: 0,
            buf: BytesMut::with_capacity(16 * 1024),
            direct: None,
        }
    }
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Lengths only: the bytes hold lock values.
        f.debug_struct("Outbox")
            .field("generation", &self.generation)
            .field("unwritten", &self.buf.len())
            .field("direct", &self.direct.is_some())
            .finish()
    }
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-update of plain buffers; keep going.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn outbox(&self) -> MutexGuard<'_, Outbox> {
        // As `lock`: a poisoned lock means a panic mid-update of a plain buffer; keep going.
        self.outbox.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends a queueing under the state lock: the backlog as it now stands, the lock let go, and the
    /// writer woken when `wake` (the queueing found `out` empty: the writer takes the whole buffer
    /// each time it wakes, so only the first command of a batch needs to wake it; `notify_one`
    /// keeps a permit if the writer is busy writing).
    pub(super) fn end_queueing(&self, st: MutexGuard<'_, State>, wake: bool) {
        self.backlog.store(st.pending.len(), Ordering::Relaxed);
        drop(st);
        if wake {
            self.wake_writer.notify_one();
        }
    }
}

impl State {
    /// Queues `request`'s slot, behind the others: one command more queued on this connection and
    /// not yet handed to the writer (in `out`, or the open group's, encoded when it closes).
    pub(super) fn push(&mut self, request: Request) {
        self.pending.push_back(request);
        self.queued += 1;
        self.unsent += 1;
    }
}
