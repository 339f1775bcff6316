//! A TCP proxy on loopback that delays every byte by a fixed time in each direction (latency, not a
//! bandwidth limit: bytes keep flowing while earlier ones wait), for tests of slow networks.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A running proxy; stops accepting when dropped (open connections end with their peers).
pub struct DelayProxy {
    pub port: u16,
    delay_us: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl DelayProxy {
    /// Listens on a free loopback port and forwards to `127.0.0.1:upstream`, adding `delay` each way.
    pub async fn start(upstream: u16, delay: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let delay_us = Arc::new(AtomicU64::new(delay.as_micros() as u64));
        let d = delay_us.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let d = d.clone();
                tokio::spawn(async move {
                    let addr = SocketAddr::from(([127, 0, 0, 1], upstream));
                    if let Ok(server) = TcpStream::connect(addr).await {
                        let (cr, cw) = client.into_split();
                        let (sr, sw) = server.into_split();
                        tokio::spawn(pipe(cr, sw, d.clone()));
                        tokio::spawn(pipe(sr, cw, d));
                    }
                });
            }
        });
        Self {
            port,
            delay_us,
            task,
        }
    }

    /// Changes the delay for bytes read from now on.
    pub fn set_delay(&self, delay: Duration) {
        self.delay_us
            .store(delay.as_micros() as u64, Ordering::Relaxed);
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Copies `from` to `to`, each chunk released `delay` after it was read.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay_us: Arc<AtomicU64>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((at, chunk)) = rx.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let delay = Duration::from_micros(delay_us.load(Ordering::Relaxed));
                if tx
                    .send((Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = writer.await;
}
