//! One node's subscriber connection (`super`'s): connect, subscribe to every wanted channel,
//! deliver messages to the registry, `PING` once a period with nothing owed and reconnect when it
//! falls silent (`transport::stall`), reconnect with backoff.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::BytesMut;
use redis_protocol::resp2::decode::decode_bytes_mut;
use redis_protocol::resp2::types::BytesFrame;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::super::bounded::{Framer, Limits};
use super::super::connect::{jitter, open, Stream};
use super::super::resp::encode_args;
use super::super::stall::{self, Stall};
use super::super::ConnectOptions;
use super::hub::{Conn, Hub};
use crate::addr::NodeAddr;

/// One node's subscriber loop: connect, (re)subscribe to every wanted channel, forward messages,
/// reconnect with backoff when the connection drops.
pub(super) async fn run(
    hub: Arc<Hub>,
    conn: Arc<Conn>,
    opts: ConnectOptions,
    stop: CancellationToken,
) {
    let mut delay = opts.reconnect_min;
    let mut first = true;
    loop {
        let stream = tokio::select! {
            _ = stop.cancelled() => return,
            s = open(&conn.addr, &opts, false) => s,
        };
        let Ok((stream, _)) = stream else {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(delay + jitter(delay)) => {}
            }
            delay = (delay * 2).min(opts.reconnect_max);
            continue;
        };
        let connected_at = tokio::time::Instant::now();
        {
            // A new connection has no subscriptions: rebuild them from the registry, dropping whatever
            // was queued for the old one.
            let channels = hub.channels();
            let mut out = conn.out();
            out.clear();
            for channel in channels.keys() {
                encode_args(&mut out, &[b"SUBSCRIBE", channel]);
            }
            let rejoined = if first { 0 } else { channels.len() };
            conn.resubscribing.store(rejoined, Ordering::Relaxed);
            first = false;
        }
        conn.wake.notify_one();
        let period = stall::period(opts.connect_timeout);
        let stopped = match stream {
            Stream::Tcp(tcp) => serve(&hub, &conn, tcp, &opts.limits, period, &stop).await,
            Stream::Tls(tls) => serve(&hub, &conn, *tls, &opts.limits, period, &stop).await,
        };
        if stopped {
            return;
        }
        // A connection that dropped soon after opening (a proxy in front of a dead node, maxclients)
        // must not turn into a reconnect storm: back off unless it stayed up for a while.
        if connected_at.elapsed() > opts.reconnect_max {
            delay = opts.reconnect_min;
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(delay + jitter(delay)) => {}
        }
        delay = (delay * 2).min(opts.reconnect_max);
    }
}

/// Writes queued (un)subscriptions and delivers messages until the connection fails (`false`) or the
/// engine stops (`true`). Once a `period`, a connection with channels and nothing owed is sent a
/// `PING`: a subscriber otherwise only ever reads, and one whose node vanished without a word would
/// stay deaf, every waiter behind it sleeping out its pause. One that owed a reply at the last look
/// and read nothing since is closed (`transport::stall`): at most two periods after the first
/// unanswered write. The reconnect resubscribes and wakes its channels' waiters. A write that does
/// not complete in two periods (the socket's buffer full, its peer gone) closes it too.
async fn serve<S: AsyncRead + AsyncWrite>(
    hub: &Hub,
    conn: &Conn,
    stream: S,
    limits: &Limits,
    period: std::time::Duration,
    stop: &CancellationToken,
) -> bool {
    let (mut rd, mut wr) = tokio::io::split(stream);
    let mut buf = BytesMut::with_capacity(4096);
    let mut framer = Framer::new(*limits);
    let mut look = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stall = Stall::new(period);
    // Reads so far, and whether something written since the last read awaits its answer (every
    // command on this connection is answered: subscriptions confirmed, a `PING` ponged).
    let mut reads = 0u64;
    let mut owed = false;
    loop {
        let mut ping = false;
        tokio::select! {
            _ = stop.cancelled() => return true,
            _ = conn.wake.notified() => {}
            _ = look.tick() => {
                // Pinged now, owed from this look: judged at the next.
                ping = !owed && !hub.channels().is_empty();
                if stall.look(tokio::time::Instant::now(), reads, owed || ping) {
                    tracing::warn!(
                        node = %conn.addr,
                        silent = ?period,
                        "subscriber connection silent while a reply was owed: reconnecting"
                    );
                    return false;
                }
            }
            read = rd.read_buf(&mut buf) => {
                if !matches!(read, Ok(n) if n > 0) || !deliver(hub, conn, &mut buf, &mut framer) {
                    return false;
                }
                reads += 1;
                owed = false;
                continue;
            }
        }
        let batch = {
            let mut out = conn.out();
            if ping {
                encode_args(&mut out, &[b"PING"]);
            }
            std::mem::take(&mut *out)
        };
        if !batch.is_empty() {
            let write = async { wr.write_all(&batch).await.and(wr.flush().await) };
            tokio::select! {
                _ = stop.cancelled() => return true,
                written = tokio::time::timeout(period * 2, write) => {
                    if !matches!(written, Ok(Ok(()))) {
                        return false;
                    }
                }
            }
            owed = true;
        }
    }
}

/// Wakes the waiters of every complete `message` frame in `buf`; false if the stream is corrupt or
/// breaks a bound (`bounded` frames it first, so `redis-protocol` only sees a complete frame nested at
/// most `MAX_DEPTH` deep). Messages are hints: a node that sends nonsense only costs its waiters their
/// early wake-up, and gets its connection closed.
pub(super) fn deliver(hub: &Hub, conn: &Conn, buf: &mut BytesMut, framer: &mut Framer) -> bool {
    let node = &conn.addr;
    loop {
        let mut frame = match framer.next_frame(buf) {
            Ok(Some(frame)) => frame,
            Ok(None) => return true,
            Err(broken) => {
                tracing::warn!(%node, %broken, "subscriber connection closed");
                return false;
            }
        };
        let kind = match decode_bytes_mut(&mut frame) {
            Ok(Some((BytesFrame::Array(parts), _, _))) => match &parts[..] {
                [BytesFrame::BulkString(kind), BytesFrame::BulkString(channel), third] => {
                    let mut channels = hub.channels();
                    match (&kind[..], channels.get_mut(channel), third) {
                        (b"message", Some(entry), BytesFrame::BulkString(payload)) => {
                            entry.wake(payload, conn.node_bit)
                        }
                        (b"message", Some(entry), _) => entry.wake_all(),
                        (b"subscribe", Some(entry), _) if conn.rejoin() | !entry.active => {
                            entry.active = true;
                            entry.wake_all();
                        }
                        (b"message" | b"subscribe" | b"unsubscribe", _, _) => {}
                        _ => return closed(node, "unknown pub/sub message kind"),
                    }
                    continue;
                }
                // The keepalive's answer: `serve` only needed to read something.
                [BytesFrame::BulkString(pong), _] if pong.eq_ignore_ascii_case(b"pong") => continue,
                _ => "array that is not a pub/sub message",
            },
            // `PING` outside subscribed mode (no channel subscribed on the server yet, or any more).
            Ok(Some((BytesFrame::SimpleString(pong), _, _))) if &pong[..] == b"PONG" => continue,
            // A node loading its data refuses `PING` (not `SUBSCRIBE`): alive, answering.
            Ok(Some((BytesFrame::Error(e), _, _))) if e.starts_with("LOADING") => continue,
            Ok(Some((BytesFrame::Error(_), _, _))) => "server error",
            Ok(Some(_)) => "reply that is not an array",
            Ok(None) | Err(_) => "malformed reply",
        };
        // The only replies on this connection are pub/sub arrays and pongs: anything else is out of step.
        return closed(node, kind);
    }
}

fn closed(node: &NodeAddr, why: &str) -> bool {
    tracing::warn!(%node, why, "subscriber connection closed: unexpected reply to SUBSCRIBE");
    false
}
