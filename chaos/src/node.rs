//! [`RedisNode`]: one real `redis-server` process on a loopback port, without persistence unless its
//! [`NodeSpec`] asks for it, with the faults the scenarios need (kill -9, restart on the same port,
//! SIGSTOP/SIGCONT). Killed when dropped.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::procs::Proc;
use crate::resp;

/// How a node's `redis-server` is started; a node keeps its spec across restarts.
#[derive(Debug, Clone, Default)]
pub struct NodeSpec {
    /// Extra `redis-server` arguments, after the defaults (`--appendonly no`, …): a later value wins.
    pub args: Vec<String>,
    /// Extra environment variables (e.g. an `LD_PRELOAD`).
    pub env: Vec<(String, String)>,
    /// Its working directory (`--dir`, where an AOF goes). Default: the system temp dir.
    pub dir: Option<PathBuf>,
}

impl NodeSpec {
    /// `appendonly yes` with `appendfsync always` in `dir` (created if missing): every write is in
    /// the AOF, fsynced, before its reply leaves, so a `kill -9` and restart brings every
    /// acknowledged key back (scenario 17).
    pub fn durable(dir: PathBuf) -> Self {
        let args = ["--appendonly", "yes", "--appendfsync", "always"];
        Self {
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
            dir: Some(dir),
        }
    }
}

/// One redis-server process.
#[derive(Debug)]
pub struct RedisNode {
    /// Loopback port it listens on; kept across restarts.
    pub port: u16,
    spec: NodeSpec,
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
            if let Some(node) = Self::try_start_on(port, NodeSpec::default()) {
                return node;
            }
        }
        panic!("could not start redis-server on a free port after 20 tries");
    }

    fn try_start_on(port: u16, spec: NodeSpec) -> Option<Self> {
        let dir = spec.dir.clone().unwrap_or_else(std::env::temp_dir);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            panic!("node directory {}: {e}", dir.display());
        }
        let mut cmd = Command::new("redis-server");
        // By default no persistence at all: a restart comes back empty, which is the point of
        // scenario 7. A spec's arguments come later, so they win.
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--protected-mode", "no", "--dir"])
            .arg(dir)
            .args(&spec.args)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
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
            spec,
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

    /// Starts the node again on the same port, with the same spec: empty, unless the spec persists
    /// (then it has reloaded its AOF). Blocks until it answers PING (not before the load is done:
    /// a loading server answers `-LOADING`).
    ///
    /// # Panics
    /// If the port cannot be bound again within 5 s.
    pub fn restart(&mut self) {
        self.restart_as(self.spec.clone());
    }

    /// `kill -9`, then [`RedisNode::restart`] with `spec` from now on (also for later restarts).
    ///
    /// # Panics
    /// As [`RedisNode::restart`].
    pub fn restart_as(&mut self, spec: NodeSpec) {
        self.kill9();
        for _ in 0..50 {
            if let Some(node) = Self::try_start_on(self.port, spec.clone()) {
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
