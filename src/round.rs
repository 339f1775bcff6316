//! What every round needs before its fan-out: a turn from admission control, and a node deadline
//! fitted to the network.
//!
//! The order matters for validity: admission is awaited **before** the round's clock starts, so a
//! round that waited in this process's queue does not count that wait against the node deadline,
//! while validity is still measured from a moment before any of its bytes can reach a node.

use std::time::Duration;

use tokio::time::Instant;

use crate::admission::Admitted;
use crate::error::LockError;
use crate::fanout::Deadline;
use crate::Redlock;

impl Redlock {
    /// Waits for a round slot until `until` (`None`: as long as it takes).
    ///
    /// # Errors
    /// [`LockError::Overloaded`] if `until` passes first; nothing was sent.
    pub(crate) async fn admit(&self, until: Option<Instant>) -> Result<Admitted<'_>, LockError> {
        self.admission().enter(self.nodes(), until).await
    }

    /// The deadline of a round that starts at `start`: the fitted node deadline first, extended for
    /// nodes that are answering, but never past what the TTL allows nor past `limit` (a lock's
    /// current validity, for extends).
    pub(crate) fn round_deadline(
        &self,
        start: Instant,
        ttl: Duration,
        limit: Option<Instant>,
    ) -> Deadline {
        let longest = start + self.settings().timing.longest_round(ttl);
        let last = limit.map_or(longest, |l| l.min(longest));
        Deadline::new(start, self.round_timeout(ttl), last)
    }

    /// The per-node deadline of a round of a lock with this TTL: the configured one, or fitted to the
    /// slowest node's measured round trip (see [`crate::timing::Timing::fitted_node_timeout`]).
    pub(crate) fn round_timeout(&self, ttl: Duration) -> Duration {
        let rtt = self.nodes().iter().filter_map(|n| n.rtt()?.bound()).max();
        self.settings().timing.fitted_node_timeout(ttl, rtt)
    }
}
