//! The Redis nodes under test: spawned locally ([`spawn`]) or given with `--nodes`, checked before a run
//! ([`probe`]) and watched during it ([`health`]).

pub mod health;
pub mod probe;
pub mod spawn;

use std::time::Duration;

use probe::NodeUrl;

/// Parses every URL and checks that each node answers PING; returns the parsed URLs and the first
/// node's `redis_version`. The error is one line naming the node.
pub fn preflight(urls: &[String]) -> Result<(Vec<NodeUrl>, String), String> {
    let nodes = urls
        .iter()
        .map(|u| NodeUrl::parse(u))
        .collect::<Result<Vec<_>, _>>()?;
    let mut version = String::from("unknown");
    for (i, node) in nodes.iter().enumerate() {
        let v = probe::check(node, Duration::from_secs(1))?;
        if i == 0 {
            version = v;
        }
    }
    Ok((nodes, version))
}
