//! [`Redlock::new`]: validates the configuration, connects to every node (each handshake loading every
//! lock kind's scripts and the operator's) and builds the engine's core with its random tag.

use super::core::Core;
use super::Redlock;
use crate::algo::value::EngineTag;
use crate::config::Config;
use crate::error::LockError;
use crate::transport;

impl Redlock {
    /// Validates `config` and connects to every node concurrently.
    ///
    /// Waits at most `connect_timeout` for the first connections. An unreachable node is not an error
    /// here: it starts disconnected, votes "failed" until it comes back, and reconnects in the background.
    /// Invalid configuration (no nodes, a malformed URL, a duplicate node, a factor out of range) is, and
    /// so is a node its transport cannot serve at all ([`LockError::Node`]).
    pub async fn new(config: Config) -> Result<Self, LockError> {
        let mut settings = config.validate()?;
        settings.connect.scripts = super::operate::handshake_scripts();
        settings.connect.coalesce = &crate::kinds::exclusive::COALESCED;
        let connects = settings
            .nodes
            .iter()
            .map(|addr| transport::connect(settings.transport, addr.clone(), &settings.connect));
        let nodes = futures::future::join_all(connects).await;
        if let Some((index, source)) = nodes
            .iter()
            .enumerate()
            .find_map(|(index, node)| Some((index, node.setup_error()?)))
        {
            return Err(LockError::Node { index, source });
        }
        // One server behind two names (localhost and 127.0.0.1, say) would vote twice.
        let mut seen = std::collections::HashMap::new();
        for (index, node) in nodes.iter().enumerate() {
            if let Some(run_id) = node.run_id() {
                if let Some(first) = seen.insert(run_id, index) {
                    return Err(LockError::InvalidConfig(format!(
                        "nodes {first} and {index} are the same Redis server (same run_id); \
                         Redlock needs independent nodes"
                    )));
                }
            }
        }
        let tag = EngineTag::random().map_err(|e| LockError::Random(e.to_string()))?;
        Ok(Self::from_core(Core::new(settings, nodes, tag)))
    }
}
