//! [`RedisNode`]: one real `redis-server` process on a loopback port, without persistence, with the
//! faults the scenarios need (kill -9, restart on the same port, SIGSTOP/SIGCONT). Killed when dropped.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::procs::Proc;
use crate::resp;

/// One redis-server process.
#[derive(Debug)]
pub struct RedisNode {
    /// Loopback port it listens on; kept across restarts.
    pub port: u16,
    proc: Option<Proc>,
}

impl RedisNode {
    /// Starts a node on a free port and waits until it answers PING.
    ///
    /// # Panics
    /// If `redis-server` cannot be run or no port works after 20 tries.
    pub fn start() -> Self {
        for _ in 0..20 {
            let port = free_port();
            if let Some(node) = Self::try_start_on(port) {
                return node;
            }
        }
        panic!("could not start redis-server on a free port after 20 tries");
    }

    fn try_start_on(port: u16) -> Option<Self> {
        let mut cmd = Command::new("redis-server");
        // No persistence at all: a restart comes back empty, which is the point of scenario 7.
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--protected-mode", "no", "--dir"])
            .arg(std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let proc = Proc::spawn(format!("redis-server :{port}"), cmd).unwrap_or_else(|e| {
            panic!(
                "cannot run redis-server ({e}); install it with `apt-get install -y redis-server` \
                 or run through scripts/with-redis"
            )
        });
        let mut node = Self {
            port,
            proc: Some(proc),
        };
        node.wait_ready(Duration::from_secs(5)).then_some(node)
    }

    fn wait_ready(&mut self, within: Duration) -> bool {
        let until = Instant::now() + within;
        while Instant::now() < until {
            match self.proc.as_mut().map(Proc::try_wait) {
                Some(None) => {}
                _ => return false, // exited, e.g. the port was taken
            }
            if self.try_cmd(&[b"PING"]).as_deref() == Some("PONG") {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// `redis://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `kill -9`: the process dies at once, its keys with it.
    pub fn kill9(&mut self) {
        if let Some(mut proc) = self.proc.take() {
            proc.kill();
        }
    }

    /// Starts the node again, empty, on the same port. Blocks until it answers PING.
    ///
    /// # Panics
    /// If the port cannot be bound again within 5 s.
    pub fn restart(&mut self) {
        self.kill9();
        for _ in 0..50 {
            if let Some(node) = Self::try_start_on(self.port) {
                *self = node;
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("could not restart redis-server on port {}", self.port);
    }

    /// SIGSTOP: connections stay open, nothing is answered.
    pub fn freeze(&self) {
        if let Some(p) = &self.proc {
            p.stop();
        }
    }

    /// SIGCONT.
    pub fn thaw(&self) {
        if let Some(p) = &self.proc {
            p.cont();
        }
    }

    /// Runs one command; the reply as text, `None` if the node did not answer within a second.
    pub fn try_cmd(&self, args: &[&[u8]]) -> Option<String> {
        resp::command(self.port, args, Duration::from_secs(1))
    }

    /// Runs one command.
    ///
    /// # Panics
    /// If the node does not answer.
    pub fn cmd(&self, args: &[&[u8]]) -> String {
        self.try_cmd(args)
            .unwrap_or_else(|| panic!("node :{} did not answer {:?}", self.port, args.first()))
    }
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}
