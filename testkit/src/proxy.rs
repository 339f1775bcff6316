//! [`Proxy`]: a TCP proxy between clients and one node, with network faults (the one proxy of the
//! workspace: the library's tests, chaos's scenarios 6 and the mixed faults).
//!
//! - [`Mode::Pass`]: bytes go through.
//! - [`Mode::Delay`]: every chunk is delivered `d` after it was read, in order, both directions.
//! - [`Mode::Drop`]: a blackhole — bytes are read and thrown away. The stream is then out of sync, so
//!   when the mode changes again every connection that lost bytes is closed (as TCP would, after its
//!   retransmission timeout).
//! - [`Mode::Hang`]: nothing is read; bytes wait in the kernel buffers and are delivered, late, when the
//!   mode changes. Late replies are exactly what the engine must never count.
//! - [`Mode::Reset`]: every connection is closed with an RST, and new ones are reset on accept.
//!
//! And [`Proxy::sever`]: the connections open now go silent for good, new ones pass (a peer gone
//! without a word).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// What the proxy does to the bytes right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Forward.
    Pass,
    /// Forward after this delay, each direction.
    Delay(Duration),
    /// Read and discard; close on leaving this mode.
    Drop,
    /// Stop reading; deliver everything when the mode changes.
    Hang,
    /// Reset every connection.
    Reset,
}

/// A running proxy on a loopback port; stops (and closes its connections) when dropped.
#[derive(Debug)]
pub struct Proxy {
    /// The port clients connect to.
    pub port: u16,
    mode: watch::Sender<Mode>,
    /// Bumped by [`Proxy::sever`]: a connection accepted under an older count goes silent.
    severed: watch::Sender<u64>,
    task: JoinHandle<()>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `127.0.0.1:upstream`.
    pub async fn start(upstream: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let (mode, rx) = watch::channel(Mode::Pass);
        let (severed, cut) = watch::channel(0);
        let task = tokio::spawn(accept_loop(listener, upstream, rx, cut));
        Ok(Self {
            port,
            mode,
            severed,
            task,
        })
    }

    /// `redis://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// A proxy that delays every chunk by `delay` in each direction from the start (latency, not a
    /// bandwidth limit: bytes keep flowing while earlier ones wait).
    ///
    /// # Panics
    /// If no loopback port can be bound.
    pub async fn delayed(upstream: u16, delay: Duration) -> Self {
        let proxy = Self::start(upstream).await.expect("bind a loopback proxy");
        proxy.set(Mode::Delay(delay));
        proxy
    }

    /// Switches every connection, current and future, to `mode`.
    pub fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }

    /// [`Mode::Delay`] for bytes read from now on.
    pub fn set_delay(&self, delay: Duration) {
        self.set(Mode::Delay(delay));
    }

    /// Every connection open now goes silent for good: what its client sends is read and dropped,
    /// nothing comes back, and the client is never told (no FIN, no RST) — a host that lost power, a
    /// NAT that forgot the flow. The server's side is closed. Connections made later pass as the mode
    /// says.
    pub fn sever(&self) {
        self.severed.send_modify(|n| *n += 1);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every connection task: all sockets close.
        self.task.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: u16,
    mode: watch::Receiver<Mode>,
    severed: watch::Receiver<u64>,
) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        let Ok((client, _)) = listener.accept().await else {
            // Out of file descriptors or similar: do not spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        if *mode.borrow() == Mode::Reset {
            let _ = client.set_zero_linger();
            drop(client);
            continue;
        }
        // Cut by the severs from now on only (the version is taken here, at the accept).
        let mut cut = severed.clone();
        cut.mark_unchanged();
        conns.spawn(serve(client, upstream, mode.clone(), cut));
        // Reap finished connections so the set stays small over a long run.
        while conns.try_join_next().is_some() {}
    }
}

/// How one direction of a connection ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    Closed,
    Reset,
}

async fn serve(
    client: TcpStream,
    upstream: u16,
    mode: watch::Receiver<Mode>,
    mut severed: watch::Receiver<u64>,
) {
    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
        let _ = client.set_zero_linger();
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    // Bytes dropped in either direction desynchronise the whole connection.
    let lost = Arc::new(AtomicBool::new(false));
    let end = tokio::select! {
        e = pump(&mut cr, &mut sw, mode.clone(), lost.clone()) => e,
        e = pump(&mut sr, &mut cw, mode, lost) => e,
        Ok(()) = severed.changed() => {
            // The server's side goes; the client's stays open, read and never answered, until the
            // client closes it or the proxy stops.
            drop((sr, sw));
            let mut sink = vec![0u8; 16 * 1024];
            while matches!(cr.read(&mut sink).await, Ok(n) if n > 0) {}
            drop(cw);
            return;
        }
    };
    if end == End::Reset {
        let _ = AsRef::<TcpStream>::as_ref(&cr).set_zero_linger();
        let _ = AsRef::<TcpStream>::as_ref(&sr).set_zero_linger();
    }
}

/// Moves bytes from `from` to `to` under the current mode until either side closes or a fault ends it.
async fn pump(
    from: &mut OwnedReadHalf,
    to: &mut OwnedWriteHalf,
    mut mode: watch::Receiver<Mode>,
    lost: Arc<AtomicBool>,
) -> End {
    // A reader stamps each chunk with its delivery time; a writer delivers in order. Two loops so that a
    // delay does not also slow down reading (delivery time = read time + d, exactly).
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let current = *mode.borrow_and_update();
            if lost.load(Ordering::Relaxed) && current != Mode::Drop {
                return End::Reset;
            }
            match current {
                Mode::Reset => return End::Reset,
                Mode::Hang => {
                    if mode.changed().await.is_err() {
                        return End::Closed;
                    }
                    continue;
                }
                _ => {}
            }
            tokio::select! {
                read = from.read(&mut buf) => {
                    let n = match read {
                        Ok(0) | Err(_) => return End::Closed,
                        Ok(n) => n,
                    };
                    let now = *mode.borrow();
                    let at = match now {
                        Mode::Drop => {
                            lost.store(true, Ordering::Relaxed);
                            continue;
                        }
                        Mode::Reset => return End::Reset,
                        // Read just as the hang began: hold it, as the kernel buffer would have.
                        Mode::Hang => {
                            while *mode.borrow_and_update() == Mode::Hang {
                                if mode.changed().await.is_err() {
                                    return End::Closed;
                                }
                            }
                            Instant::now()
                        }
                        Mode::Delay(d) => Instant::now() + d,
                        Mode::Pass => Instant::now(),
                    };
                    if tx.send((at, buf[..n].to_vec())).is_err() {
                        return End::Closed;
                    }
                }
                changed = mode.changed() => {
                    if changed.is_err() {
                        return End::Closed;
                    }
                }
            }
        }
    };
    let writer = async move {
        while let Some((at, bytes)) = rx.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        end = reader => end,
        () = writer => End::Closed,
    }
}
