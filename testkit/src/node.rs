//! [`RedisNode`]: one real `redis-server` process on a free loopback port, in a data directory of its
//! own, with the faults tests and scenarios inject (kill -9, restart on the same port, SIGSTOP/SIGCONT).
//! Stopped by pid, and its directory removed, when dropped.
//!
//! Why a directory per node: with `--dir` shared (the system temp dir, as before the kit), a replica's
//! full sync writes `dump.rdb` there, and every node started later loads it at startup — locks of an
//! earlier test, or an RDB of a newer Redis that an older one refuses to load at all.

use std::fmt;
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::dir::TempDir;
use crate::port::try_free_port;
use crate::resp;
use crate::signal::die_with_parent;

/// How a node's `redis-server` is started; a node keeps its spec across restarts.
#[derive(Debug, Clone, Default)]
pub struct NodeSpec {
    /// Extra `redis-server` arguments, after the defaults (no persistence, loopback, …): a later value
    /// wins. Default: none.
    pub args: Vec<String>,
    /// Extra environment variables (e.g. an `LD_PRELOAD`). Default: none.
    pub env: Vec<(String, String)>,
    /// A data directory the caller owns and keeps across restarts (where an AOF goes). Default: `None`,
    /// a fresh [`TempDir`] of the node's own, replaced by a fresh one on every restart (so a restarted
    /// node comes back empty even if a full sync had written an RDB) and removed with the node.
    pub dir: Option<PathBuf>,
    /// `PR_SET_PDEATHSIG`: the server gets SIGKILL when the *thread* that started it exits, so a
    /// `kill -9` of the owner takes its servers with it. For a long-lived starter thread (chaos's main
    /// thread); not for tests, whose nodes may be started on short-lived threads. Default: off.
    pub die_with_parent: bool,
    /// A process group of its own (`setpgid`): a terminal's Ctrl-C (SIGINT to the foreground group)
    /// then reaches only the owner, which stops its nodes itself (loadgen, which reports first). Not
    /// for tests: a test binary killed by Ctrl-C runs no destructor, and its nodes would stay. Default:
    /// off, the owner's group.
    pub own_group: bool,
    /// The server binary. Default: `None`, `redis-server` from the PATH (see `crate::server`).
    pub server: Option<PathBuf>,
}

impl NodeSpec {
    /// A spec with these extra `redis-server` arguments.
    pub fn with_args(args: &[&str]) -> Self {
        Self {
            args: args.iter().map(|a| a.to_string()).collect(),
            ..Self::default()
        }
    }

    /// `appendonly yes` with `appendfsync always` in `dir` (created if missing): every write is in the
    /// AOF, fsynced, before its reply leaves, so a `kill -9` and restart brings every acknowledged key
    /// back.
    pub fn durable(dir: PathBuf) -> Self {
        Self {
            dir: Some(dir),
            ..Self::with_args(&["--appendonly", "yes", "--appendfsync", "always"])
        }
    }

    /// The same spec on the server binary at `path` (see [`crate::server::binary`]).
    #[must_use]
    pub fn on(mut self, path: PathBuf) -> Self {
        self.server = Some(path);
        self
    }

    /// The same spec with [`NodeSpec::die_with_parent`] on.
    #[must_use]
    pub fn tied(mut self) -> Self {
        self.die_with_parent = true;
        self
    }

    /// The same spec with [`NodeSpec::own_group`](#structfield.own_group) on.
    #[must_use]
    pub fn in_own_group(mut self) -> Self {
        self.own_group = true;
        self
    }

    /// The server binary it runs.
    pub fn binary(&self) -> &Path {
        self.server
            .as_deref()
            .unwrap_or_else(|| Path::new("redis-server"))
    }

    /// A TLS-only server uses `--port 0`: a plain PING cannot reach it.
    fn tls_only(&self) -> bool {
        self.args
            .windows(2)
            .any(|w| w[0] == "--port" && w[1] == "0")
    }
}

/// One redis-server process.
#[derive(Debug)]
pub struct RedisNode {
    /// The loopback port it listens on; kept across restarts.
    pub port: u16,
    spec: NodeSpec,
    child: Option<Child>,
    /// The node's own data directory (when the spec names none); dropped after the process.
    own_dir: Option<TempDir>,
}

impl RedisNode {
    /// Starts a node on a free port and waits until it answers PING.
    ///
    /// # Panics
    /// If `redis-server` cannot be run or no port works after 20 tries.
    pub fn start() -> Self {
        Self::start_spec(NodeSpec::default())
    }

    /// Starts a node with extra `redis-server` arguments (e.g. `--requirepass x`).
    pub fn start_with(extra: &[&str]) -> Self {
        Self::start_spec(NodeSpec::with_args(extra))
    }

    /// Starts a node whose ACL user `locker` (password `pw`) may do anything but scripting
    /// (`-@scripting`): where only native lock commands serve (Valkey 9).
    pub fn start_without_scripting() -> Self {
        Self::start_with(&[
            "--user",
            "locker",
            "on",
            ">pw",
            "~*",
            "&*",
            "+@all",
            "-@scripting",
        ])
    }

    /// Its URL as that `locker` user.
    pub fn locker_url(&self) -> String {
        format!("redis://locker:pw@127.0.0.1:{}", self.port)
    }

    /// Starts a node with extra arguments and extra environment variables (e.g. `LD_PRELOAD`).
    pub fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut spec = NodeSpec::with_args(extra);
        spec.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Self::start_spec(spec)
    }

    /// Starts a node as `spec` says, on a free port.
    ///
    /// # Panics
    /// As [`RedisNode::start`].
    pub fn start_spec(spec: NodeSpec) -> Self {
        Self::try_start_spec(spec).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`RedisNode::start_spec`] for an owner that reports instead of panicking (loadgen's `main`).
    ///
    /// # Errors
    /// [`StartError::Spawn`] if the binary cannot be run; [`StartError::NotUp`] if no free port
    /// worked after 20 tries (a port found free can be taken before the server binds it).
    pub fn try_start_spec(spec: NodeSpec) -> Result<Self, StartError> {
        let mut last = String::new();
        for _ in 0..20 {
            let port = try_free_port()
                .map_err(|e| StartError::NotUp(format!("no free loopback port: {e}")))?;
            match Self::launch(port, spec.clone()) {
                Ok(node) => return Ok(node),
                Err(StartError::NotUp(why)) => last = why,
                Err(e) => return Err(e),
            }
        }
        Err(StartError::NotUp(format!(
            "{} did not come up on a free port after 20 tries; the last: {last}",
            spec.binary().display()
        )))
    }

    /// Starts a node that speaks only TLS on its port (`--port 0 --tls-port <port>`) with the given
    /// certificate arguments. [`RedisNode::cmd`] does not work on it (plain RESP).
    pub fn start_tls_only(cert_args: &[&str]) -> Self {
        for _ in 0..20 {
            let port = crate::port::free_port();
            let mut spec = NodeSpec::with_args(&["--port", "0", "--tls-port", &port.to_string()]);
            spec.args.extend(cert_args.iter().map(|s| s.to_string()));
            if let Some(node) = Self::try_start_on(port, spec) {
                return node;
            }
        }
        panic!("could not start a TLS-only redis-server on a free port after 20 tries");
    }

    /// Starts a node on `port`; `None` if it did not come up within 5 s (e.g. the port was taken).
    ///
    /// # Panics
    /// If `redis-server` cannot be run at all.
    pub fn try_start_on(port: u16, spec: NodeSpec) -> Option<Self> {
        match Self::launch(port, spec) {
            Ok(node) => Some(node),
            Err(StartError::NotUp(_)) => None,
            Err(e) => panic!("{e}"),
        }
    }

    /// Starts a node on `port` and waits up to 5 s until it answers.
    fn launch(port: u16, spec: NodeSpec) -> Result<Self, StartError> {
        let own_dir = spec.dir.is_none().then(|| TempDir::new("node"));
        let dir = match (&spec.dir, &own_dir) {
            (Some(dir), _) => dir.clone(),
            (None, Some(own)) => own.path().to_path_buf(),
            (None, None) => unreachable!("a node without a spec dir has its own"),
        };
        if let Err(e) = std::fs::create_dir_all(&dir) {
            panic!("node directory {}: {e}", dir.display());
        }
        let mut cmd = Command::new(spec.binary());
        // No persistence unless the spec asks: a restart comes back empty. The spec's arguments come
        // later, so they win.
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--protected-mode", "no", "--dir"])
            .arg(&dir)
            .args(&spec.args)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if spec.own_group {
            cmd.process_group(0);
        }
        if spec.die_with_parent {
            die_with_parent(&mut cmd);
        }
        let child = cmd.spawn().map_err(|error| StartError::Spawn {
            server: spec.binary().to_path_buf(),
            error,
        })?;
        let mut node = Self {
            port,
            spec,
            child: Some(child),
            own_dir,
        };
        node.wait_ready(Duration::from_secs(5))
            .map_err(StartError::NotUp)?;
        Ok(node)
    }

    /// Waits until the node answers; why not otherwise.
    fn wait_ready(&mut self, within: Duration) -> Result<(), String> {
        let until = Instant::now() + within;
        while Instant::now() < until {
            match self.child.as_mut().map(Child::try_wait) {
                Some(Ok(None)) => {}
                // E.g. the port was taken.
                Some(Ok(Some(status))) => {
                    return Err(format!("port {}: exited at start ({status})", self.port))
                }
                Some(Err(e)) => return Err(format!("port {}: {e}", self.port)),
                None => return Err(format!("port {}: not running", self.port)),
            }
            // PONG, or NOAUTH from a node that requires a password: either way it is up (a loading
            // server answers LOADING: not yet). A TLS-only node cannot answer a plain PING: a TCP
            // connect is all we can check.
            let up = if self.spec.tls_only() {
                TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            } else {
                self.try_cmd_within(&[b"PING"], Duration::from_millis(500))
                    .is_some_and(|r| r == "PONG" || r.starts_with("NOAUTH"))
            };
            if up {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Err(format!(
            "port {}: no answer to PING within {within:?}",
            self.port
        ))
    }

    /// `redis://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.id() as i32)
    }

    /// Its data directory (`--dir`).
    pub fn dir(&self) -> &Path {
        match (&self.spec.dir, &self.own_dir) {
            (Some(dir), _) => dir,
            (None, Some(own)) => own.path(),
            (None, None) => unreachable!("a node without a spec dir has its own"),
        }
    }

    /// `kill -9`: the process dies at once, its data with it (a stopped process too: SIGCONT first).
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            crate::signal::send(child.id() as i32, libc::SIGCONT);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the node again on the same port, with the same spec: empty (in a fresh directory of its
    /// own), unless the spec persists into its own `dir` (then it has reloaded its AOF). Blocks until
    /// it answers PING (a loading server answers `-LOADING`, so not before the load is done).
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
        self.own_dir = None; // the old directory goes; a fresh one comes with the new process
        for _ in 0..50 {
            if let Some(node) = Self::try_start_on(self.port, spec.clone()) {
                *self = node;
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("could not restart redis-server on port {}", self.port);
    }

    /// SIGSTOP: the process stays, connections stay open, nothing answers.
    pub fn freeze(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// SIGCONT.
    pub fn thaw(&self) {
        self.signal(libc::SIGCONT);
    }

    fn signal(&self, sig: i32) {
        let pid = self.pid().expect("node is not running");
        assert!(crate::signal::send(pid, sig), "kill({pid}, {sig}) failed");
    }

    /// Runs one command on a fresh connection; the reply as text ([`resp::parse`]): `nil` for a null
    /// bulk, `ERR…` for errors, the integer or the string otherwise.
    ///
    /// # Panics
    /// If the node does not answer within 2 s.
    pub fn cmd(&self, args: &[&[u8]]) -> String {
        self.try_cmd(args)
            .unwrap_or_else(|| panic!("node :{} did not answer {:?}", self.port, args.first()))
    }

    /// [`RedisNode::cmd`] with text arguments.
    pub fn cmd_str(&self, args: &[&str]) -> String {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.cmd(&args)
    }

    /// Runs one command; `None` if the node did not answer within 2 s.
    pub fn try_cmd(&self, args: &[&[u8]]) -> Option<String> {
        self.try_cmd_within(args, Duration::from_secs(2))
    }

    /// Runs one command; `None` if the node did not answer within `timeout`.
    pub fn try_cmd_within(&self, args: &[&[u8]], timeout: Duration) -> Option<String> {
        resp::command(self.port, args, timeout)
    }

    /// Whether `key` exists on this node.
    pub fn exists(&self, key: &[u8]) -> bool {
        self.cmd(&[b"EXISTS", key]) == "1"
    }
}

impl Drop for RedisNode {
    fn drop(&mut self) {
        self.kill9(); // before `own_dir` goes: the server must not write into a removed directory
    }
}

/// Why a node did not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// The server binary could not be run (`NotFound`: not installed, or no such path).
    Spawn {
        /// The binary.
        server: PathBuf,
        /// What running it said.
        error: std::io::Error,
    },
    /// It ran but did not come up: it exited at start (e.g. its port was taken) or did not answer in
    /// time.
    NotUp(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Spawn { server, error } => {
                write!(f, "cannot run {} ({error})", server.display())?;
                if error.kind() == std::io::ErrorKind::NotFound
                    && server == Path::new("redis-server")
                {
                    f.write_str(
                        ". Install it with `sudo apt-get install -y redis-server`, or run through \
                         `scripts/with-redis`, which installs it when missing",
                    )?;
                }
                Ok(())
            }
            Self::NotUp(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Spawn { error, .. } => Some(error),
            Self::NotUp(_) => None,
        }
    }
}

/// `n` fresh nodes.
pub fn nodes(n: usize) -> Vec<RedisNode> {
    (0..n).map(|_| RedisNode::start()).collect()
}

/// Their URLs.
pub fn urls(nodes: &[RedisNode]) -> Vec<String> {
    nodes.iter().map(RedisNode::url).collect()
}
