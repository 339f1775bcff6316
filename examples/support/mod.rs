//! Shared by the examples: three throwaway redis-server nodes on free loopback ports (started by the
//! workspace's test kit, `testkit/`: each in a directory of its own, stopped when dropped, and killed
//! with the example if it is killed), or your own nodes from `REDLOCK_NODES` (comma-separated
//! `redis://` URLs).
//!
//! `REDLOCK_QUARANTINE=off` (or `false`, as `Config::from_env` reads it) says the nodes in `REDLOCK_NODES` were started for this run and hold no
//! lock anyone could lose (what `tests/examples.rs` does): the crashed-node quarantine is then off
//! for them too. Never set it for real nodes.
#![allow(dead_code)]

/// Examples that run themselves as their replica processes.
pub mod replicas;

use testkit::{NodeSpec, RedisNode};

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

/// An engine on [`nodes`], with the quarantine as [`Servers::quarantine`] says.
pub async fn engine() -> Result<(redlock_engine::Redlock, Servers), Box<dyn std::error::Error>> {
    let (urls, servers) = nodes()?;
    let redlock = builder(&urls, &servers).build().await?;
    Ok((redlock, servers))
}

/// A builder for another engine on the same nodes (as another process would have), with the
/// quarantine as [`Servers::quarantine`] says.
pub fn builder(urls: &[String], servers: &Servers) -> redlock_engine::Builder {
    redlock_engine::Redlock::builder()
        .nodes(urls.to_vec())
        .quarantine(servers.quarantine())
}

/// The redis-server processes started here, stopped on drop.
pub struct Servers(Vec<RedisNode>);

impl Servers {
    /// Whether these examples started the nodes themselves.
    pub fn started_here(&self) -> bool {
        !self.0.is_empty()
    }

    /// Whether the crashed-node quarantine should be on (it is by default: a node up for less than
    /// the maximum lock lifetime does not vote). Nodes started here, or declared fresh with
    /// `REDLOCK_QUARANTINE=off`, hold no lock anyone could lose, so it can be off for them; keep it
    /// on for real nodes.
    pub fn quarantine(&self) -> bool {
        // The values `Config::from_env` reads as false.
        let fresh = std::env::var("REDLOCK_QUARANTINE")
            .is_ok_and(|v| matches!(v.as_str(), "0" | "false" | "no" | "off"));
        !(self.started_here() || fresh)
    }
}

/// Starts `n` throwaway nodes (see [`nodes`]); each answers PING before this returns.
pub fn start_nodes(n: usize) -> Result<(Vec<String>, Servers), Box<dyn std::error::Error>> {
    // Tied to this (main) thread: a killed example takes its servers with it.
    let servers = Servers(
        (0..n)
            .map(|_| RedisNode::start_spec(NodeSpec::default().tied()))
            .collect(),
    );
    Ok((testkit::urls(&servers.0), servers))
}
