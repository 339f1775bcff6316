//! Test harness: real `redis-server` processes on free loopback ports, stopped (by pid) when dropped.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use redlock_engine::{Redlock, Transport};

pub mod clock;
pub mod hostile;
pub mod proxy;
pub mod topology;

/// One redis-server process without persistence.
#[derive(Debug)]
pub struct RedisNode {
    pub port: u16,
    child: Option<Child>,
    frozen: bool,
    extra: Vec<String>,
    /// Environment variables for the process (kept for `restart`).
    env: Vec<(String, String)>,
}

impl RedisNode {
    /// Starts a node on a free port and waits until it answers PING.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts a node with extra `redis-server` arguments (e.g. `--requirepass x`).
    pub fn start_with(extra: &[&str]) -> Self {
        Self::start_with_env(extra, &[])
    }

    /// Starts a node with extra arguments and extra environment variables (e.g. `LD_PRELOAD`).
    pub fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> Self {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        for _ in 0..20 {
            let port = free_port();
            if let Some(node) = Self::try_start_on_with_env(port, &extra, &env) {
                return node;
            }
        }
        panic!("could not start redis-server on a free port after 20 tries");
    }

    fn try_start_on(port: u16, extra: &[String]) -> Option<Self> {
        Self::try_start_on_with_env(port, extra, &[])
    }

    fn try_start_on_with_env(
        port: u16,
        extra: &[String],
        env: &[(String, String)],
    ) -> Option<Self> {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--daemonize", "no", "--protected-mode", "no", "--dir", &std::env::temp_dir().to_string_lossy()])
            .args(extra)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run redis-server ({e}). Install it with `sudo apt-get install -y redis-server`, \
                     or run the tests through `scripts/with-redis`, which installs it when missing"
                )
            });
        let mut node = Self {
            port,
            child: Some(child),
            frozen: false,
            extra: extra.to_vec(),
            env: env.to_vec(),
        };
        if node.wait_ready(Duration::from_secs(5)) {
            Some(node)
        } else {
            node.kill9();
            None
        }
    }

    fn wait_ready(&mut self, within: Duration) -> bool {
        let until = Instant::now() + within;
        while Instant::now() < until {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(_)) = child.try_wait() {
                    return false; // exited, e.g. the port was taken
                }
            }
            // PONG, or NOAUTH from a node that requires a password: either way it is up. A TLS-only
            // node cannot answer a plain PING: a TCP connect is all we can check.
            let up = if self.tls_only() {
                TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            } else {
                self.try_cmd(&[b"PING"])
                    .is_some_and(|r| r == "PONG" || r.starts_with("NOAUTH"))
            };
            if up {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// Starts a node that speaks only TLS on its port (`--port 0 --tls-port <port>`) with the given
    /// certificate arguments. `cmd` does not work on it (plain RESP).
    pub fn start_tls_only(cert_args: &[&str]) -> Self {
        for _ in 0..20 {
            let port = free_port();
            let mut extra: Vec<String> = ["--port", "0", "--tls-port", &port.to_string()]
                .iter()
                .map(|s| s.to_string())
                .collect();
            extra.extend(cert_args.iter().map(|s| s.to_string()));
            if let Some(node) = Self::try_start_on(port, &extra) {
                return node;
            }
        }
        panic!("could not start a TLS-only redis-server on a free port after 20 tries");
    }

    fn tls_only(&self) -> bool {
        self.extra
            .windows(2)
            .any(|w| w[0] == "--port" && w[1] == "0")
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.id() as i32)
    }

    /// `kill -9`: the process dies at once, its data with it.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.frozen = false;
    }

    /// Starts the node again on the same port (empty: no persistence).
    pub fn restart(&mut self) {
        self.kill9();
        for _ in 0..50 {
            if let Some(node) = Self::try_start_on_with_env(self.port, &self.extra, &self.env) {
                *self = node;
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("could not restart redis-server on port {}", self.port);
    }

    /// SIGSTOP: the process stays, connections stay open, nothing answers.
    pub fn freeze(&mut self) {
        self.signal(libc::SIGSTOP);
        self.frozen = true;
    }

    /// SIGCONT.
    pub fn thaw(&mut self) {
        self.signal(libc::SIGCONT);
        self.frozen = false;
    }

    fn signal(&self, sig: i32) {
        let pid = self.pid().expect("node is not running");
        // SAFETY: kill(2) has no memory-safety preconditions; the pid is our own child.
        assert_eq!(
            unsafe { libc::kill(pid, sig) },
            0,
            "kill({pid}, {sig}) failed"
        );
    }

    /// Runs one command on a fresh connection and returns the reply as text
    /// (`nil` for a null bulk, `ERR…` for errors, the integer or the string otherwise).
    pub fn cmd(&self, args: &[&[u8]]) -> String {
        self.try_cmd(args)
            .unwrap_or_else(|| panic!("node {} did not answer", self.port))
    }

    fn try_cmd(&self, args: &[&[u8]]) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        let mut req = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            req.extend_from_slice(a);
            req.extend_from_slice(b"\r\n");
        }
        s.write_all(&req).ok()?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = s.read(&mut chunk).ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
            if let Some(reply) = parse_reply(&buf) {
                return Some(reply);
            }
        }
    }

    /// Whether `key` exists on this node.
    pub fn exists(&self, key: &[u8]) -> bool {
        self.cmd(&[b"EXISTS", key]) == "1"
    }
}

impl Drop for RedisNode {
    fn drop(&mut self) {
        if self.frozen {
            self.thaw();
        }
        self.kill9();
    }
}

fn parse_reply(buf: &[u8]) -> Option<String> {
    let end = buf.windows(2).position(|w| w == b"\r\n")?;
    let line = String::from_utf8_lossy(&buf[1..end]).into_owned();
    match buf[0] {
        b'+' | b':' | b'-' => Some(line),
        b'$' => {
            let len: i64 = line.parse().ok()?;
            if len < 0 {
                return Some("nil".into());
            }
            let start = end + 2;
            let stop = start + len as usize;
            (buf.len() >= stop + 2).then(|| String::from_utf8_lossy(&buf[start..stop]).into_owned())
        }
        _ => Some(line),
    }
}

/// `n` fresh nodes.
pub fn nodes(n: usize) -> Vec<RedisNode> {
    (0..n).map(|_| RedisNode::start()).collect()
}

/// A loopback port nobody listens on: a node that is down.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn dead_url() -> String {
    format!("redis://127.0.0.1:{}", free_port())
}

pub fn urls(nodes: &[RedisNode]) -> Vec<String> {
    nodes.iter().map(RedisNode::url).collect()
}

/// Every transport the core suite runs against.
pub fn transports() -> Vec<Transport> {
    #[allow(unused_mut)] // only pushed to with the `fred` feature
    let mut all = vec![Transport::Pipeline];
    #[cfg(feature = "fred")]
    all.push(Transport::Fred);
    all
}

/// A builder for nodes this test just started: they hold no lock anyone could lose, so the crashed-node
/// quarantine (which would keep them out for `max_ttl`) is off. `tests/quarantine.rs` turns it on.
pub fn builder() -> redlock_engine::Builder {
    Redlock::builder().quarantine(false)
}

/// The default configuration for nodes this test just started (quarantine off, see [`builder`]).
pub fn fresh_config() -> redlock_engine::Config {
    redlock_engine::Config {
        quarantine: false,
        ..Default::default()
    }
}

/// An engine on `urls` with short retry pauses, for tests.
pub async fn engine(urls: Vec<String>, transport: Transport) -> Redlock {
    builder()
        .nodes(urls)
        .transport(transport)
        .retry(3, Duration::from_millis(5), Duration::from_millis(5))
        .connect_timeout(Duration::from_millis(500))
        .build()
        .await
        .expect("engine builds")
}

/// Polls `check` every 10 ms until it holds or `within` passes.
pub async fn eventually(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + within;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Tries `try_acquire(resource)` every 20 ms until it is granted (`want_grant`) or refused (otherwise),
/// or `within` passes; a grant is released at once, best effort (the node set may stop voting between
/// the two). Whether the wanted outcome came.
pub async fn until_outcome(
    e: &Redlock,
    resource: &[u8],
    want_grant: bool,
    within: Duration,
) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        let granted = match e.try_acquire(resource, Duration::from_secs(1)).await {
            Ok(lock) => {
                let _ = e.release(lock).await;
                true
            }
            Err(_) => false,
        };
        if granted == want_grant {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// A throwaway CA and a server certificate for 127.0.0.1, made with `openssl` in a temp directory.
/// Returns (directory, CA file, cert file, key file).
pub fn tls_material() -> (
    std::path::PathBuf,
    std::path::PathBuf,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let dir = std::env::temp_dir().join(format!(
        "redlock-tls-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: &[&str]| {
        let status = Command::new("openssl")
            .args(args)
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("openssl is needed for the TLS tests (Debian package openssl)");
        assert!(status.success(), "openssl {args:?} failed");
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=redlock-test-ca",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    (
        dir.clone(),
        dir.join("ca.crt"),
        dir.join("server.crt"),
        dir.join("server.key"),
    )
}
