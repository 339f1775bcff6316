//! The Redis nodes under test: spawned locally ([`spawn`]) or given with `--nodes` (parsed by [`addr`]),
//! checked before a run ([`probe`]) and watched during it ([`health`]).

pub mod addr;
pub mod health;
pub mod probe;
pub mod spawn;

use std::time::Duration;

use addr::NodeUrl;

/// Parses every URL and checks that every server behind each node (see [`probe::servers`]) answers PING;
/// returns the parsed URLs and the first server's `redis_version`. The error is one line naming the node.
pub fn preflight(urls: &[String]) -> Result<(Vec<NodeUrl>, String), String> {
    let nodes = urls
        .iter()
        .map(|u| NodeUrl::parse(u))
        .collect::<Result<Vec<_>, _>>()?;
    let timeout = Duration::from_secs(1);
    let mut version = None;
    for node in &nodes {
        for server in probe::servers(node, timeout)? {
            let v = probe::check(&server, timeout)?;
            version.get_or_insert(v);
        }
    }
    Ok((nodes, version.unwrap_or_else(|| "unknown".into())))
}
