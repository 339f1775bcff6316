//! Shared by the examples: three throwaway redis-server nodes on free loopback ports (started by the
//! workspace's test kit, `testkit/`: each in a directory of its own, stopped when dropped), or your own
//! nodes from `REDLOCK_NODES` (comma-separated `redis://` URLs).
#![allow(dead_code)]

use testkit::RedisNode;

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

/// The redis-server processes started here, stopped on drop.
pub struct Servers(Vec<RedisNode>);

impl Servers {
    /// Whether these examples started the nodes themselves. Such nodes hold no lock anyone could lose,
    /// so the crashed-node quarantine (on by default: a node up for less than the maximum lock
    /// lifetime does not vote) can be off for them; keep it on for real nodes.
    pub fn started_here(&self) -> bool {
        !self.0.is_empty()
    }
}

/// Starts `n` throwaway nodes (see [`nodes`]); each answers PING before this returns.
pub fn start_nodes(n: usize) -> Result<(Vec<String>, Servers), Box<dyn std::error::Error>> {
    let servers = Servers(testkit::nodes(n));
    Ok((testkit::urls(&servers.0), servers))
}
