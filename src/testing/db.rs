//! What a node's data commands act on, and all a script can reach through `redis.call`: the keys,
//! the pub/sub channels and the node's clock. The script cache and the node's identity sit beside
//! it in `super::state`, out of a script's reach.

use super::channels::Channels;
use super::clock::Clock;
use super::keyspace::Keyspace;

/// The keys, the channels and the clock of one node.
#[derive(Debug, Default)]
pub(crate) struct Db {
    pub(crate) keys: Keyspace,
    pub(crate) channels: Channels,
    pub(crate) clock: Clock,
}

impl Db {
    /// Fixes the time the next command (or the whole next script) reads keys at: now.
    pub(crate) fn begin(&mut self) {
        self.keys.now = self.clock.now_ms();
    }
}
