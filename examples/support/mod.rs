//! Shared by the examples: three throwaway redis-server nodes on free loopback ports, or your own
//! nodes from `REDLOCK_NODES` (comma-separated `redis://` URLs).
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The node URLs to use and the servers started for them (stopped when dropped).
pub fn nodes() -> Result<(Vec<String>, Servers), Box<dyn std::error::Error>> {
    match std::env::var("REDLOCK_NODES") {
        Ok(list) => Ok((
            list.split(',').map(str::to_string).collect(),
            Servers(Vec::new()),
        )),
        Err(_) => start_nodes(3),
    }
}

/// An engine on [`nodes`], with the quarantine off only for nodes started here (see `basic.rs`).
pub async fn engine() -> Result<(redlock_engine::Redlock, Servers), Box<dyn std::error::Error>> {
    let (urls, servers) = nodes()?;
    let redlock = redlock_engine::Redlock::builder()
        .nodes(urls)
        .quarantine(!servers.started_here())
        .build()
        .await?;
    Ok((redlock, servers))
}

/// Child redis-server processes, killed on drop.
pub struct Servers(Vec<Child>);

impl Servers {
    /// Whether these examples started the nodes themselves. Such nodes hold no lock anyone could lose,
    /// so the crashed-node quarantine (on by default: a node up for less than the maximum lock
    /// lifetime does not vote) can be off for them; keep it on for real nodes.
    pub fn started_here(&self) -> bool {
        !self.0.is_empty()
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `n` throwaway nodes (see [`nodes`]).
pub fn start_nodes(n: usize) -> Result<(Vec<String>, Servers), Box<dyn std::error::Error>> {
    let mut servers = Servers(Vec::new());
    let mut urls = Vec::new();
    for _ in 0..n {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start redis-server ({e}); install it: sudo apt-get install -y redis-server"))?;
        servers.0.push(child);
        urls.push(format!("redis://127.0.0.1:{port}"));
        // Wait until it accepts connections.
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Ok((urls, servers))
}
