//! A hostile node: a loopback TCP server that answers the handshake like Redis would (AUTH, SELECT,
//! `SCRIPT LOAD` with the right SHA1, `INFO server`, PING) and then answers chosen commands with crafted
//! RESP. Plain threads and blocking sockets, so it keeps streaming whatever the test's runtime does.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the server does with one command.
#[derive(Debug, Clone)]
pub enum Action {
    /// Answer like a freshly started Redis with no keys would (handshake commands; anything else `+OK`).
    Normal,
    /// Write these bytes as the reply.
    Send(Vec<u8>),
    /// Write `header`, then `total` bytes of `fill` in 64 KiB writes, stopping when the peer closes.
    Stream {
        header: Vec<u8>,
        fill: Vec<u8>,
        total: usize,
    },
    /// Write these bytes one at a time (1 ms apart), then close the connection.
    DripThenClose(Vec<u8>),
    /// Shut down the write half (the peer reads EOF) and keep reading.
    HalfClose,
}

/// Chooses the action for one command (its arguments, verb first as sent).
pub type Rule = dyn Fn(&[Vec<u8>]) -> Action + Send + Sync;

/// The running server; stops accepting when dropped (open connections end when the engine closes them).
pub struct Hostile {
    /// The loopback port it listens on.
    pub port: u16,
    /// Connections accepted so far (handshakes included): shows reconnect backoff.
    pub connections: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Hostile {
    /// Starts a server whose every command goes through `rule`.
    pub fn start(rule: impl Fn(&[Vec<u8>]) -> Action + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let rule: Arc<Rule> = Arc::new(rule);
        let (count, halt) = (connections.clone(), stop.clone());
        std::thread::spawn(move || {
            while !halt.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        count.fetch_add(1, Ordering::Relaxed);
                        let rule = rule.clone();
                        std::thread::spawn(move || serve(stream, &*rule));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Self {
            port,
            connections,
            stop,
        }
    }

    /// Answers the lock commands (`SET`, `EVALSHA`, `EVAL`) with `action`, the rest like Redis.
    pub fn on_lock_commands(action: Action) -> Self {
        Self::start(move |cmd| match verb(cmd).as_str() {
            "SET" | "EVALSHA" | "EVAL" => action.clone(),
            _ => Action::Normal,
        })
    }

    /// Answers commands with verb `which` (e.g. `"SCRIPT"`, `"INFO"`, `"AUTH"`) with `action`.
    pub fn on(which: &'static str, action: Action) -> Self {
        Self::start(move |cmd| {
            if verb(cmd) == which {
                action.clone()
            } else {
                Action::Normal
            }
        })
    }

    /// `redis://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// How the engine names this node in its errors.
    pub fn name(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The command's verb, upper-cased.
pub fn verb(cmd: &[Vec<u8>]) -> String {
    cmd.first()
        .map(|v| String::from_utf8_lossy(v).to_uppercase())
        .unwrap_or_default()
}

fn serve(mut stream: TcpStream, rule: &Rule) {
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        while let Some((cmd, used)) = parse_command(&buf) {
            buf.drain(..used);
            let reply = match rule(&cmd) {
                Action::Normal => normal(&cmd),
                Action::Send(bytes) => bytes,
                Action::Stream {
                    header,
                    fill,
                    total,
                } => {
                    if stream.write_all(&header).is_err() {
                        return;
                    }
                    let block: Vec<u8> = fill.iter().copied().cycle().take(64 * 1024).collect();
                    let mut sent = 0;
                    while sent < total {
                        if stream.write_all(&block).is_err() {
                            return;
                        }
                        sent += block.len();
                    }
                    continue;
                }
                Action::DripThenClose(bytes) => {
                    for b in bytes {
                        if stream.write_all(&[b]).is_err() {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    return;
                }
                Action::HalfClose => {
                    let _ = stream.shutdown(Shutdown::Write);
                    continue;
                }
            };
            if stream.write_all(&reply).is_err() {
                return;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// What Redis answers, as far as the engine and fred ask.
pub fn normal(cmd: &[Vec<u8>]) -> Vec<u8> {
    match verb(cmd).as_str() {
        "PING" => b"+PONG\r\n".to_vec(),
        "SCRIPT" => {
            // What Redis answers: the SHA1 of the source (the engine checks it against its own).
            let source = cmd.get(2).map_or(&[][..], |s| s);
            bulk(sha1_smol::Sha1::from(source).digest().to_string().as_bytes())
        }
        "INFO" => bulk(
            b"# Server\r\nredis_version:7.0.0\r\nrun_id:0123456789abcdef0123456789abcdef01234567\r\n\
              uptime_in_seconds:100000\r\n",
        ),
        "SUBSCRIBE" => {
            let channel = cmd.get(1).cloned().unwrap_or_default();
            let mut out = b"*3\r\n".to_vec();
            out.extend(bulk(b"subscribe"));
            out.extend(bulk(&channel));
            out.extend_from_slice(b":1\r\n");
            out
        }
        "EVALSHA" | "EVAL" => b":1\r\n".to_vec(),
        _ => b"+OK\r\n".to_vec(),
    }
}

/// `data` as a RESP bulk string.
pub fn bulk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// One command (an array of bulk strings) off the front of `buf`, and the bytes it used.
fn parse_command(buf: &[u8]) -> Option<(Vec<Vec<u8>>, usize)> {
    let line = |from: usize| -> Option<(usize, usize)> {
        let end = from + buf.get(from..)?.windows(2).position(|w| w == b"\r\n")?;
        let n = std::str::from_utf8(&buf[from + 1..end])
            .ok()?
            .parse()
            .ok()?;
        Some((n, end + 2))
    };
    let (count, mut at) = line(0)?;
    let mut args = Vec::with_capacity(count);
    for _ in 0..count {
        let (len, start) = line(at)?;
        let body = buf.get(start..start + len)?;
        args.push(body.to_vec());
        at = start + len + 2;
        if buf.len() < at {
            return None;
        }
    }
    Some((args, at))
}

/// This process's resident memory, in bytes (`VmRSS` in `/proc/self/status`).
pub fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}
