//! The writer of one pipelined connection: every command queued since its last write, in one write
//! as far as the socket takes it (see `outbox`).

use std::sync::Arc;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncWrite, AsyncWriteExt, WriteHalf};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::client::TlsStream;
use tokio_util::sync::CancellationToken;

use super::clock::{self, IDLE_SAMPLE};
use super::outbox::take_queued;
use super::state::Shared;
use crate::error::NodeError;

/// The writer's half of the connection.
pub(super) enum Half {
    /// Plain TCP: written as far as the socket takes it, the rest left in the outbox.
    Tcp(TcpHalf),
    /// TLS: a batch is taken whole and written with the session's state, on the runtime only.
    Tls(WriteHalf<TlsStream<TcpStream>>),
}

/// A plain TCP connection's write half that does not shut the socket's writing down when dropped
/// (tokio's does, `shutdown(SHUT_WR)`): the writer task may end before a thread without the runtime
/// has written what is left in the outbox through its second handle (`state::Outbox::direct`), and
/// a shut-down socket would refuse it. The socket closes when its last handle does.
pub(super) struct TcpHalf(Option<OwnedWriteHalf>);

impl TcpHalf {
    pub(super) fn new(half: OwnedWriteHalf) -> Self {
        Self(Some(half))
    }

    fn get(&self) -> &OwnedWriteHalf {
        self.0.as_ref().expect("held until dropped")
    }
}

impl Drop for TcpHalf {
    fn drop(&mut self) {
        if let Some(half) = self.0.take() {
            half.forget();
        }
    }
}

pub(super) async fn write_loop(
    shared: Arc<Shared>,
    mut wr: Half,
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
            let mut ob = shared.outbox();
            let mut st = shared.lock();
            if st.generation != generation {
                // This wake-up may have been meant for the new connection's writer: pass it on.
                drop(st);
                drop(ob);
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
            take_queued(&mut st, &mut ob.buf, now);
        }
        let written = match &mut wr {
            Half::Tcp(tcp) => push_tcp(&shared, tcp, generation, &token).await,
            Half::Tls(tls) => push_whole(&shared, tls, &mut batch, generation, &token).await,
        };
        match written {
            Ok(true) => {}
            Ok(false) => return,
            Err(_) => {
                shared.fail(generation, NodeError::ConnectionLost);
                return;
            }
        }
    }
}

/// Writes the outbox until it is empty, as far as the socket takes it each time; the rest stays in
/// the outbox while the socket is full, where a caller without the runtime can still write it.
/// `Ok(false)`: this connection is over (cancelled, or another one installed).
async fn push_tcp(
    shared: &Shared,
    tcp: &mut TcpHalf,
    generation: u64,
    token: &CancellationToken,
) -> std::io::Result<bool> {
    let tcp = tcp.get();
    loop {
        {
            let mut ob = shared.outbox();
            if ob.generation != generation {
                return Ok(false);
            }
            while !ob.buf.is_empty() {
                match tcp.try_write(&ob.buf) {
                    Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                    Ok(n) => ob.buf.advance(n),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
            if ob.buf.is_empty() {
                return Ok(true);
            }
        }
        tokio::select! {
            _ = token.cancelled() => return Ok(false),
            ready = tcp.writable() => ready?,
        }
    }
}

/// Takes the outbox whole and writes it (TLS: only the stream can encrypt it).
async fn push_whole<W: AsyncWrite + Unpin>(
    shared: &Shared,
    wr: &mut W,
    batch: &mut BytesMut,
    generation: u64,
    token: &CancellationToken,
) -> std::io::Result<bool> {
    {
        let mut ob = shared.outbox();
        if ob.generation != generation {
            return Ok(false);
        }
        std::mem::swap(&mut ob.buf, batch);
    }
    if batch.is_empty() {
        return Ok(true);
    }
    let written = tokio::select! {
        _ = token.cancelled() => return Ok(false),
        // flush: a TLS stream may keep encrypted bytes buffered after write_all returns.
        r = async { wr.write_all(batch).await?; wr.flush().await } => r,
    };
    batch.clear();
    written.map(|()| true)
}
