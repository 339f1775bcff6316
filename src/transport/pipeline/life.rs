//! A connection's life: installed after its handshake, torn down at its first failure (every
//! command in flight fails, nothing is replayed on the next one) or when it falls silent while a
//! reply is owed (`transport::stall`), reconnected in the background with exponential backoff and
//! jitter, so a dead node never blocks a caller.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::time::Instant;

use super::read::read_loop;
use super::state::Shared;
use super::write::{write_loop, Half, TcpHalf};
use super::{clock, outbox};
use crate::error::NodeError;
use crate::protocol::server::{Info, Profile};
use crate::transport::connect::{jitter, open, Stream};
use crate::transport::stall::{self, Stall};

impl Shared {
    pub(super) fn install(self: &Arc<Self>, stream: Stream, info: Option<Info>) {
        // Before the connection is usable: a restarted node must not vote even once.
        if let Some(info) = &info {
            self.quarantine.on_connect(&info.identity);
        }
        // The handshake let a user without scripting through only where native commands serve.
        let profile = Profile::for_info(info.as_ref(), self.opts.native);
        let token = self.shutdown.child_token();
        let direct = outbox::direct_handle(&stream);
        let (generation, stale) = {
            let mut ob = self.outbox();
            let mut st = self.lock();
            // Nothing can be queued while disconnected; should a slot be left, it can never be
            // answered on the new connection and would shift every reply after it: fail it.
            let stale = std::mem::take(&mut st.pending);
            st.generation += 1;
            st.connected = true;
            st.last_error = None;
            st.out.clear();
            st.group = None;
            st.sampled = false;
            st.probe = None;
            st.time_refused = false;
            st.queued = st.pending.len() as u64;
            st.answered = 0;
            st.unsent = 0;
            st.connected_at = std::time::Instant::now();
            st.conn_token = token.clone();
            st.profile = profile;
            self.profile.store(profile.code(), Ordering::Relaxed);
            ob.generation = st.generation;
            ob.buf.clear();
            ob.direct = direct;
            (st.generation, stale)
        };
        for slot in stale {
            slot.fail(&NodeError::ConnectionLost);
        }
        tokio::spawn(watch(self.clone(), generation, token.clone()));
        match stream {
            // Owned halves: no lock between reader and writer on the plain path.
            Stream::Tcp(tcp) => {
                let (rd, wr) = tcp.into_split();
                tokio::spawn(read_loop(self.clone(), rd, generation, token.clone()));
                tokio::spawn(write_loop(
                    self.clone(),
                    Half::Tcp(TcpHalf::new(wr)),
                    generation,
                    token,
                ));
            }
            Stream::Tls(tls) => {
                let (rd, wr) = tokio::io::split(*tls);
                tokio::spawn(read_loop(self.clone(), rd, generation, token.clone()));
                tokio::spawn(write_loop(self.clone(), Half::Tls(wr), generation, token));
            }
        }
        if self.clock.enabled() {
            // A first reading at connect, so a jump before this engine's first acquire shows too.
            clock::queue_sample(&mut self.lock());
            self.wake_writer.notify_one();
        }
    }

    /// Tears down connection `generation`: fails every in-flight request with `cause` (no replay) and
    /// reconnects. A protocol error (a broken bound, a reply out of step) also stays as the node's last
    /// error, so requests made before the reconnect fail with it rather than a bare "not connected".
    pub(super) fn fail(self: &Arc<Self>, generation: u64, cause: NodeError) {
        let (drained, delay) = {
            let mut ob = self.outbox();
            let mut st = self.lock();
            if st.generation != generation || !st.connected {
                return;
            }
            st.connected = false;
            st.out.clear();
            // Never replayed; and the second handle goes, so the socket closes with the tasks'.
            ob.buf.clear();
            ob.direct = None;
            st.group = None;
            st.sampled = false;
            st.unsent = 0;
            st.conn_token.cancel();
            self.backlog.store(0, Ordering::Relaxed);
            if matches!(cause, NodeError::Protocol(_)) {
                st.last_error = Some(cause.clone());
            }
            // A connection that stayed up a while resets the backoff; one that failed at once doubles it.
            st.backoff = if st.connected_at.elapsed() > self.opts.reconnect_max {
                self.opts.reconnect_min
            } else {
                (st.backoff * 2).min(self.opts.reconnect_max)
            };
            (std::mem::take(&mut st.pending), st.backoff)
        };
        for slot in drained {
            slot.fail(&cause);
        }
        if !self.shutdown.is_cancelled() {
            tokio::spawn(reconnect_loop(self.clone(), delay));
        }
    }
}

/// Looks at connection `generation` once a `stall::period` and tears it down when it owed a reply
/// at the last look and has read none since: a node gone without a FIN or an RST (see
/// `transport::stall`) would otherwise keep it open, every request on it timing out, for as long as
/// TCP takes to give up. Reads what the reader counts, so the hot path pays nothing for it.
async fn watch(shared: Arc<Shared>, generation: u64, token: tokio_util::sync::CancellationToken) {
    let period = stall::period(shared.opts.connect_timeout);
    let mut stall = Stall::new(period);
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tokio::time::sleep(period) => {}
        }
        let (answered, owed) = {
            let st = shared.lock();
            if st.generation != generation || !st.connected {
                return;
            }
            // Only commands handed to the writer are owed a reply (see `State::unsent`).
            (st.answered, st.pending.len() > st.unsent)
        };
        if stall.look(Instant::now(), answered, owed) {
            tracing::warn!(
                node = %shared.addr,
                silent = ?period,
                "no reply while one was owed: connection taken for dead and reopened"
            );
            return shared.fail(generation, NodeError::ConnectionLost);
        }
    }
}

pub(super) async fn reconnect_loop(shared: Arc<Shared>, mut delay: std::time::Duration) {
    loop {
        // Full jitter on top of the exponential step, so many clients do not reconnect in lockstep.
        let sleep = delay + jitter(delay);
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            _ = tokio::time::sleep(sleep) => {}
        }
        let began = Instant::now();
        match open(&shared.addr, &shared.opts, true).await {
            Ok((stream, identity)) if !shared.shutdown.is_cancelled() => {
                shared.rtt.seed(began.elapsed());
                return shared.install(stream, identity);
            }
            Ok(_) => return,
            Err(e) => {
                shared.lock().last_error = Some(e);
                delay = (delay * 2).min(shared.opts.reconnect_max);
            }
        }
    }
}
