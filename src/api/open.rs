//! Opening an engine: `Redlock::new`, which hands the engine the list of kinds (`crate::kinds`).

use crate::config::Config;
use crate::engine::Redlock;
use crate::error::LockError;
use crate::kinds::catalog;

impl Redlock {
    /// Validates `config` and connects to every node concurrently.
    ///
    /// Waits at most `connect_timeout` for the first connections. An unreachable node is not an error
    /// here: it starts disconnected, votes "failed" until it comes back, and reconnects in the background.
    /// Invalid configuration (no nodes, a malformed URL, a duplicate node, a factor out of range) is, and
    /// so is a node its transport cannot serve at all ([`LockError::Node`]).
    pub async fn new(config: Config) -> Result<Self, LockError> {
        Self::start(config, catalog()).await
    }
}
