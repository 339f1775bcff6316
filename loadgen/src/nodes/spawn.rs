//! Local redis-server processes for the embedded default: free loopback ports, each node in a directory
//! of its own (removed with it), no persistence (or an AOF there with `--persistence`), stopped by pid when
//! [`SpawnedNodes`] is dropped — on a normal exit, an error, a panic (unwinding) or Ctrl-C.
//!
//! Belt and braces for the cases where no destructor runs (loadgen killed with SIGKILL): each child asks
//! the kernel for SIGKILL when its parent thread dies (`PR_SET_PDEATHSIG`), and sits in its own process
//! group so a terminal's Ctrl-C reaches loadgen first and loadgen stops the nodes itself.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::addr::NodeUrl;
use super::probe;
use crate::cli::Persistence;

/// redis-server processes owned by loadgen.
#[derive(Debug)]
pub struct SpawnedNodes {
    nodes: Vec<(u16, Child)>,
    persistence: Persistence,
    /// The binary every node runs.
    server: PathBuf,
    /// The nodes' data directories (one each; the AOF's with `--persistence`), removed on drop.
    dirs: Vec<PathBuf>,
}

impl SpawnedNodes {
    /// Starts `n` servers of the binary `server` (see [`super::server::binary`]: `redis-server`, or
    /// the one `--server` names) on free loopback ports and waits until each answers PING.
    ///
    /// Call it from the main thread: `PR_SET_PDEATHSIG` fires when the *thread* that spawned a child
    /// exits, and the main thread lives as long as the process.
    pub fn start(n: usize, persistence: Persistence, server: &Path) -> Result<Self, String> {
        let mut set = Self {
            nodes: Vec::with_capacity(n),
            persistence,
            server: server.to_path_buf(),
            dirs: Vec::new(),
        };
        for _ in 0..n {
            set.start_one()?;
        }
        Ok(set)
    }

    fn start_one(&mut self) -> Result<(), String> {
        let mut last = String::new();
        // A port found free can be taken before redis binds it: try a few.
        for _ in 0..20 {
            let port = free_port()?;
            // A directory of each node's own even without persistence: in a shared one (the temp dir
            // itself) a node would load any `dump.rdb` left there, e.g. by a replica's full sync.
            let dir =
                std::env::temp_dir().join(format!("loadgen-node-{}-{port}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            self.dirs.push(dir.clone());
            let mut child = spawn_server(&self.server, port, &dir, self.persistence)?;
            match wait_ready(&mut child, port, Duration::from_secs(5)) {
                Ok(()) => {
                    self.nodes.push((port, child));
                    return Ok(());
                }
                Err(e) => {
                    last = e;
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
        Err(format!("could not start redis-server: {last}"))
    }

    /// The nodes' URLs.
    pub fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|(port, _)| format!("redis://127.0.0.1:{port}"))
            .collect()
    }

    /// The processes' ids (for tests that kill a node mid-run).
    pub fn pids(&self) -> Vec<u32> {
        self.nodes.iter().map(|(_, c)| c.id()).collect()
    }
}

impl Drop for SpawnedNodes {
    fn drop(&mut self) {
        for (_, child) in &mut self.nodes {
            let _ = child.kill();
        }
        for (_, child) in &mut self.nodes {
            let _ = child.wait();
        }
        for dir in &self.dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn free_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free loopback port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

fn spawn_server(
    server: &Path,
    port: u16,
    dir: &Path,
    persistence: Persistence,
) -> Result<Child, String> {
    let mut cmd = Command::new(server);
    cmd.args([
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
    ]);
    match persistence.appendfsync() {
        None => cmd.args(["--appendonly", "no"]),
        Some(fsync) => cmd.args(["--appendonly", "yes", "--appendfsync", fsync]),
    };
    cmd.args([
        "--daemonize",
        "no",
        "--protected-mode",
        "no",
        "--loglevel",
        "warning",
    ])
    .arg("--dir")
    .arg(dir)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .process_group(0);
    // SAFETY: `die_with_parent` runs in the forked child before exec and only calls async-signal-safe
    // functions (prctl(2), getppid(2)); it touches no memory of the parent.
    unsafe {
        cmd.pre_exec(die_with_parent);
    }
    cmd.spawn().map_err(|e| match e.kind() {
        ErrorKind::NotFound => super::server::INSTALL_HINT.to_string(),
        _ => format!("cannot start {}: {e}", server.display()),
    })
}

/// Makes a child process die with its parent (SIGKILL on the parent's exit), so no redis-server or
/// worker process outlives loadgen even if it is killed. Runs between fork and exec: async-signal-safe
/// calls only.
pub(crate) fn die_with_parent() -> std::io::Result<()> {
    // SAFETY: prctl(2) and getppid(2) are async-signal-safe syscalls with no memory preconditions.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // The parent may have died between fork and prctl: then nobody would ever stop us.
        if libc::getppid() == 1 {
            return Err(std::io::Error::other("parent exited"));
        }
    }
    Ok(())
}

fn wait_ready(child: &mut Child, port: u16, within: Duration) -> Result<(), String> {
    let node = NodeUrl::parse(&format!("redis://127.0.0.1:{port}"))?;
    let until = Instant::now() + within;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "redis-server on port {port} exited at start ({status})"
            ));
        }
        if probe::check(&node, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if Instant::now() >= until {
            return Err(format!(
                "redis-server on port {port} did not answer PING within {within:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
