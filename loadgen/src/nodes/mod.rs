//! The Redis nodes under test: spawned locally ([`spawn`], of the binary [`server`] resolves from
//! `--server`) or given with `--nodes` (parsed by [`addr`]), checked before a run ([`probe`], which
//! also reads each server's name and version) and watched during it ([`health`]).

pub mod addr;
pub mod health;
pub mod probe;
pub mod server;
pub mod spawn;

use std::time::Duration;

use addr::NodeUrl;
use probe::ServerInfo;

/// Parses every URL and checks that every server behind each node (see [`probe::servers`]) answers PING;
/// returns the parsed URLs and what each of those servers is (name and version, in node order). The
/// error is one line naming the node.
pub fn preflight(urls: &[String]) -> Result<(Vec<NodeUrl>, Vec<ServerInfo>), String> {
    let nodes = urls
        .iter()
        .map(|u| NodeUrl::parse(u))
        .collect::<Result<Vec<_>, _>>()?;
    let timeout = Duration::from_secs(1);
    let mut servers = Vec::new();
    for node in &nodes {
        for server in probe::servers(node, timeout)? {
            servers.push(probe::check(&server, timeout)?);
        }
    }
    Ok((nodes, servers))
}
