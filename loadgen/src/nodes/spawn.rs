//! Local redis-server processes for the embedded default, started by the test kit (`testkit::RedisNode`):
//! free loopback ports, each node in a directory of its own (removed with it), no persistence (or an AOF
//! there with `--persistence`), stopped by pid when [`SpawnedNodes`] is dropped — on a normal exit, an
//! error, a panic (unwinding) or Ctrl-C.
//!
//! Belt and braces for the cases where no destructor runs (loadgen killed with SIGKILL): each node asks
//! the kernel for SIGKILL when its parent thread dies (`testkit::die_with_parent`), and sits in its own
//! process group so a terminal's Ctrl-C reaches loadgen first and loadgen stops the nodes itself.

use std::io::ErrorKind;
use std::path::Path;

use testkit::{NodeSpec, RedisNode, StartError};

use crate::cli::Persistence;

/// redis-server processes owned by loadgen.
#[derive(Debug)]
pub struct SpawnedNodes {
    nodes: Vec<RedisNode>,
}

impl SpawnedNodes {
    /// Starts `n` servers of the binary `server` (see [`super::server::binary`]: `redis-server`, or
    /// the one `--server` names) on free loopback ports and waits until each answers PING.
    ///
    /// Call it from the main thread: `PR_SET_PDEATHSIG` fires when the *thread* that spawned a child
    /// exits, and the main thread lives as long as the process.
    pub fn start(n: usize, persistence: Persistence, server: &Path) -> Result<Self, String> {
        let spec = spec(persistence, server);
        let nodes = (0..n)
            .map(|_| RedisNode::try_start_spec(spec.clone()).map_err(|e| describe(e, server)))
            .collect::<Result<_, _>>()?;
        Ok(Self { nodes })
    }

    /// The nodes' URLs.
    pub fn urls(&self) -> Vec<String> {
        testkit::urls(&self.nodes)
    }

    /// The processes' ids (for tests that kill a node mid-run).
    pub fn pids(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter_map(|n| n.pid())
            .map(|pid| pid as u32)
            .collect()
    }
}

/// How every node is started: the kit's defaults (loopback, no RDB, no AOF) with the `--persistence`
/// AOF on top, and only warnings logged.
fn spec(persistence: Persistence, server: &Path) -> NodeSpec {
    let mut args = vec!["--loglevel", "warning"];
    if let Some(fsync) = persistence.appendfsync() {
        args.extend(["--appendonly", "yes", "--appendfsync", fsync]);
    }
    NodeSpec::with_args(&args)
        .on(server.to_path_buf())
        .tied()
        .in_own_group()
}

/// One line for the user: the install hint when the server is missing.
fn describe(e: StartError, server: &Path) -> String {
    match e {
        StartError::Spawn { error, .. } if error.kind() == ErrorKind::NotFound => {
            super::server::INSTALL_HINT.to_string()
        }
        StartError::Spawn { error, .. } => format!("cannot start {}: {error}", server.display()),
        other => format!("could not start redis-server: {other}"),
    }
}
