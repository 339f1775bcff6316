//! The bytes on their way to the socket, and who may write them.
//!
//! Callers encode commands into `State::out` under the state lock; the writer task moves them here
//! and writes them, and they stay here until the socket has taken them. So a batch the socket took
//! only part of is never held inside a task: a caller that cannot count on the runtime to run the
//! writer again writes what is queued itself ([`Shared::flush_now`]), through a second handle on
//! the same socket. Those callers are a guard dropped while its thread panics and the engine's
//! last handle dropped, both often just before the runtime shuts down, which ends the writer task
//! with the releases still queued. One writer at a time, under this lock, always from the front
//! of `buf`: the wire keeps the order of the calls whoever writes.
//!
//! Lock order: this lock, then the state lock (the writer, [`Shared::flush_now`], connect and
//! failure); enqueueing takes the state lock alone.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::sync::oneshot::{self, error::TryRecvError};
use tokio::time::Instant;

use super::request::Request;
use super::state::{Outbox, Shared, State};
use crate::transport::connect::Stream;
use crate::transport::resp::encode_args;

/// How often [`Shared::flush_now`] looks again at a full socket or for the node's answer.
const POLL: Duration = Duration::from_micros(200);
/// The most of the unread replies [`Shared::flush_now`] looks through for its token: the answers to
/// 100,000 queued releases are less.
const PEEK_MAX: usize = 1 << 20;

/// A second handle on a plain TCP connection's socket, for [`Outbox::direct`].
pub(super) fn direct_handle(stream: &Stream) -> Option<std::net::TcpStream> {
    match stream {
        #[cfg(unix)]
        Stream::Tcp(tcp) => {
            use std::os::fd::AsFd;
            // Shares the socket (and its non-blocking mode): a write here never blocks the thread.
            let fd = tcp.as_fd().try_clone_to_owned().ok()?;
            Some(std::net::TcpStream::from(fd))
        }
        _ => None,
    }
}

/// Moves what callers queued in `st.out` behind the bytes already in `buf`: handed to the socket's
/// writer from now on (the RTT probe's start, no longer `unsent`, the next acquire samples again).
pub(super) fn take_queued(st: &mut State, buf: &mut BytesMut, now: Instant) {
    // The releases queued since the last write go out with it (see `coalesce`).
    super::coalesce::close(st);
    if st.probe.is_none() && !st.out.is_empty() {
        st.probe = Some((st.queued, now));
    }
    if buf.is_empty() {
        std::mem::swap(&mut st.out, buf);
    } else {
        buf.extend_from_slice(&st.out);
        st.out.clear();
    }
    st.unsent = 0;
    st.sampled = false;
}

impl Shared {
    /// Writes everything queued on this connection to its socket from the calling thread, without
    /// the runtime, and waits until the node has answered all of it (so it ran it), until `until`
    /// at most. Written alone is not enough at a process's end: bytes the node's receive window has
    /// not taken yet are still in this side's socket, and a socket closed with unread replies
    /// (the node answers while the process exits) is reset, its unsent bytes dropped. So a `PING`
    /// with a random token goes last; the node runs a connection's commands in order, so its
    /// answer, seen in the socket without taking it ([`peek`](std::net::TcpStream::peek), the
    /// reader's stream stays whole) or read by the reader task, means every command before it ran.
    /// Does nothing on a connection without a [direct handle](Outbox::direct), one that is down
    /// (what it had queued is never replayed on the next), or one with nothing unanswered.
    pub(super) fn flush_now(&self, until: std::time::Instant) {
        let (token, mut answered) = {
            let ob = self.outbox();
            let mut st = self.lock();
            if ob.direct.is_none() || !st.connected || st.generation != ob.generation {
                return;
            }
            if st.pending.is_empty() {
                return;
            }
            let token = format!("redlock-flush-{:016x}", fastrand::u64(..));
            // Behind the open group of releases, as any other command.
            super::coalesce::close(&mut st);
            encode_args(&mut st.out, &[b"PING", token.as_bytes()]);
            let (tx, rx) = oneshot::channel();
            st.push(Request::plain(Some(tx), None));
            self.backlog.store(st.pending.len(), Ordering::Relaxed);
            (token, rx)
        };
        if !self.write_now(until) {
            return;
        }
        let mut seen = vec![0u8; PEEK_MAX];
        loop {
            if !matches!(answered.try_recv(), Err(TryRecvError::Empty)) {
                return;
            }
            let peeked = match self.outbox().direct.as_ref().map(|s| s.peek(&mut seen)) {
                // The node closed the connection: nothing more will come.
                Some(Ok(0)) => return,
                Some(Ok(n)) => n,
                Some(Err(e)) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
                _ => return,
            };
            let token = token.as_bytes();
            if seen[..peeked].windows(token.len()).any(|w| w == token) {
                return;
            }
            if std::time::Instant::now() >= until {
                return;
            }
            std::thread::sleep(POLL);
        }
    }

    /// The write half of [`flush_now`](Self::flush_now): `false` if the connection went away.
    fn write_now(&self, until: std::time::Instant) -> bool {
        loop {
            {
                let mut ob = self.outbox();
                let Outbox {
                    generation,
                    buf,
                    direct,
                } = &mut *ob;
                let Some(socket) = direct.as_ref() else {
                    return false;
                };
                {
                    let mut st = self.lock();
                    if !st.connected || st.generation != *generation {
                        return false;
                    }
                    take_queued(&mut st, buf, Instant::now());
                }
                while !buf.is_empty() {
                    match (&*socket).write(buf) {
                        Ok(0) => return false,
                        Ok(n) => buf.advance(n),
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        // The writer or the reader sees the failure and tears the connection down.
                        Err(_) => return false,
                    }
                }
                if buf.is_empty() {
                    return true;
                }
            }
            // The socket is full: the node reads it back down. Poll without holding the lock, so the
            // writer task (where the runtime still runs it) may take its turn meanwhile.
            self.wake_writer.notify_one();
            if std::time::Instant::now() >= until {
                return false;
            }
            std::thread::sleep(POLL);
        }
    }
}
