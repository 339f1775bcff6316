//! The writer of one pipelined connection (one `write_all` per batch of queued commands) and the
//! reconnect loop.

use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::clock::{self, IDLE_SAMPLE};
use super::Shared;
use crate::error::NodeError;
use crate::transport::connect::{jitter, open};

pub(super) async fn write_loop<W: AsyncWrite + Unpin>(
    shared: Arc<Shared>,
    mut wr: W,
    generation: u64,
    token: CancellationToken,
) {
    let mut batch = BytesMut::with_capacity(16 * 1024);
    // One timer for the connection's life, re-armed only when it fires: none per batch.
    let guard = shared.clock.enabled();
    let idle = tokio::time::sleep(IDLE_SAMPLE);
    tokio::pin!(idle);
    loop {
        let mut idle_fired = false;
        tokio::select! {
            _ = token.cancelled() => return,
            _ = shared.wake_writer.notified() => {}
            _ = &mut idle, if guard => idle_fired = true,
        }
        {
            // Read before the lock: the sample then includes the whole write, never less.
            let now = Instant::now();
            let mut st = shared.lock();
            if st.generation != generation {
                // This wake-up may have been meant for the new connection's writer: pass it on.
                drop(st);
                shared.wake_writer.notify_one();
                return;
            }
            if !st.connected {
                // This connection failed (its token's cancel and the idle timer were ready at
                // once): queueing an idle `TIME` now would leave a slot no reply will ever match.
                return;
            }
            if idle_fired {
                if now.saturating_duration_since(st.last_sample) >= IDLE_SAMPLE {
                    clock::queue_sample(&mut st);
                }
                idle.as_mut().reset(st.last_sample + IDLE_SAMPLE);
            }
            // The releases queued since the last write go out with it (see `coalesce`).
            super::coalesce::close(&mut st);
            if st.probe.is_none() && !st.out.is_empty() {
                st.probe = Some((st.queued, now));
            }
            std::mem::swap(&mut st.out, &mut batch);
            st.unsent = 0;
            st.sampled = false;
        }
        if batch.is_empty() {
            continue;
        }
        let written = tokio::select! {
            _ = token.cancelled() => return,
            // flush: a TLS stream may keep encrypted bytes buffered after write_all returns.
            r = async { wr.write_all(&batch).await?; wr.flush().await } => r,
        };
        if written.is_err() {
            shared.fail(generation, NodeError::ConnectionLost);
            return;
        }
        batch.clear();
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
