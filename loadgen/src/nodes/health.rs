//! The health monitor: a plain thread that PINGs every node on its own connection while the runs go on,
//! so a node that dies or hangs mid-run ends the run with one clear error instead of a slow trickle of
//! failed acquires (or a hang: rslock waits for replies without a deadline).
//!
//! A thread, not a task: it must keep watching even when the runtime's only thread is saturated.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::addr::NodeUrl;
use super::probe::{self, Conn, Reply};

/// How often each node is pinged.
const INTERVAL: Duration = Duration::from_millis(200);
/// How long a PING may take before the node counts as hung.
const PING_TIMEOUT: Duration = Duration::from_secs(3);

/// Watches the nodes until dropped.
#[derive(Debug)]
pub struct Health {
    lost: watch::Receiver<Option<String>>,
    stop: Arc<AtomicBool>,
}

impl Health {
    /// Opens one connection per server behind the nodes (see [`probe::servers`]) and starts watching.
    pub fn start(nodes: &[NodeUrl]) -> Result<Self, String> {
        let mut conns = Vec::with_capacity(nodes.len());
        for node in nodes {
            for server in probe::servers(node, PING_TIMEOUT)? {
                let conn = Conn::open(&server, PING_TIMEOUT)?;
                conns.push((server, conn));
            }
        }
        let (tx, lost) = watch::channel(None);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("loadgen-health".into())
            .spawn(move || watch_nodes(conns, &tx, &flag))
            .map_err(|e| format!("cannot start the health monitor: {e}"))?;
        Ok(Self { lost, stop })
    }

    /// Resolves with a one-line reason once a node is lost; pending forever otherwise.
    pub async fn lost(&self) -> String {
        let mut rx = self.lost.clone();
        let why = rx
            .wait_for(Option::is_some)
            .await
            .map(|why| why.clone().unwrap_or_default());
        match why {
            Ok(why) => why,
            Err(_) => std::future::pending().await,
        }
    }

    /// The reason a node was lost, if one was.
    pub fn check(&self) -> Option<String> {
        self.lost.borrow().clone()
    }
}

impl Drop for Health {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn watch_nodes(
    mut conns: Vec<(NodeUrl, Conn)>,
    tx: &watch::Sender<Option<String>>,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Relaxed) {
        for (node, conn) in &mut conns {
            match conn.cmd(&[b"PING"]) {
                Ok(Reply::Simple(s)) if s == "PONG" => {}
                Ok(other) => {
                    let _ = tx.send(Some(format!(
                        "node {} answered PING with {other:?} mid-run",
                        node.url
                    )));
                    return;
                }
                Err(e) => {
                    let _ = tx.send(Some(format!(
                        "node {} stopped answering mid-run ({e})",
                        node.url
                    )));
                    return;
                }
            }
        }
        std::thread::sleep(INTERVAL);
    }
}
