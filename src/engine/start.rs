//! `Redlock::start`, behind [`Redlock::new`]: validates the configuration, connects to every node
//! (each handshake loading every script of the catalog it is given: the kinds' and the operator's)
//! and builds the engine's core with its random tag.

use super::core::Core;
use super::Redlock;
use crate::algo::value::EngineTag;
use crate::config::Config;
use crate::error::LockError;
use crate::protocol::catalog::Catalog;
use crate::protocol::scripts::COALESCED;
use crate::transport;

impl Redlock {
    /// [`Redlock::new`] over the kinds of `catalog` (see there for what it waits for and its errors).
    pub(crate) async fn start(
        config: Config,
        catalog: &'static Catalog,
    ) -> Result<Self, LockError> {
        let mut settings = config.validate()?;
        settings.connect.scripts = catalog.scripts();
        settings.connect.coalesce = &COALESCED;
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
        let core = Core::new(settings, nodes, tag, catalog);
        // The on-call signals watch the links for as long as the engine lives (weak: they must not
        // keep it alive).
        super::signals::start(std::sync::Arc::downgrade(&core));
        Ok(Self::from_core(core))
    }
}
