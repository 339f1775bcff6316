//! Admission control: at most `max_in_flight` rounds on the nodes at once; the rest wait here.
//!
//! Why: a node answers a few hundred thousand commands a second, and each round's deadline measures
//! the node. Without a bound, a burst of 50,000 acquires puts 50,000 commands on every connection at
//! once; the last of them waits behind the others in this process's own buffer and at the node, times
//! out, is reported as a node failure, and its retry adds to the pile. With the bound, excess rounds
//! wait **before** they start — before their validity clock starts and before any byte is queued — in
//! a FIFO (tokio's semaphore is fair and cancel-safe: a dropped waiter leaves the line), so past
//! capacity the engine queues and slows down instead of failing.
//!
//! A round also waits while a majority of the node connections are more than half full. A round is
//! decided as soon as a majority answered, so a node slower than the others collects the commands
//! of rounds that no longer wait for it; if a majority lag like that, new rounds would only fail with
//! "queue full". A lagging *minority* does not hold anyone back (its queue fills, its vote fails
//! fast, the others decide): a frozen node must not stop the engine.
//!
//! A wait that outlasts the caller's budget is [`LockError::Overloaded`]: the truth (nothing was
//! asked of the nodes), not a timeout blamed on them.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

use crate::algo::quorum::quorum;
use crate::error::LockError;
use crate::transport::NodeClient;

/// How often a round that holds its slot looks again at lagging connections (rare: a majority of
/// nodes more than half a queue behind).
const LAG_RECHECK: Duration = Duration::from_millis(1);

/// The engine's round gate.
#[derive(Debug)]
pub(crate) struct Admission {
    permits: Semaphore,
    /// A connection with at least this many requests outstanding is lagging.
    lagging_at: usize,
}

/// One admitted round; the slot is given back when it is dropped (the round decided).
#[derive(Debug)]
pub(crate) struct Admitted<'a> {
    _permit: Option<SemaphorePermit<'a>>,
}

impl Admission {
    pub(crate) fn new(max_in_flight: usize, max_pending: usize) -> Self {
        Self {
            permits: Semaphore::new(max_in_flight),
            lagging_at: (max_pending / 2).max(1),
        }
    }

    /// Whether enough connections have room for a round to be decided.
    fn room(&self, nodes: &[Arc<dyn NodeClient>]) -> bool {
        let with_room = nodes
            .iter()
            .filter(|n| n.backlog() < self.lagging_at)
            .count();
        nodes.is_empty() || with_room >= quorum(nodes.len())
    }

    /// Waits for a slot until `until` (`None`: as long as it takes).
    ///
    /// # Errors
    /// [`LockError::Overloaded`] when `until` passes first.
    pub(crate) async fn enter(
        &self,
        nodes: &[Arc<dyn NodeClient>],
        until: Option<Instant>,
    ) -> Result<Admitted<'_>, LockError> {
        // The uncontended path: one atomic per node and the slot's, no clock read, no timer.
        if let Ok(permit) = self.permits.try_acquire() {
            if self.room(nodes) {
                return Ok(Admitted {
                    _permit: Some(permit),
                });
            }
            drop(permit);
        }
        let since = Instant::now();
        let wait = self.permits.acquire();
        let permit = match until {
            Some(until) => match tokio::time::timeout_at(until, wait).await {
                Ok(permit) => permit,
                Err(_) => {
                    crate::observe::overloaded(since.elapsed());
                    return Err(LockError::Overloaded {
                        waited: since.elapsed(),
                    });
                }
            },
            None => wait.await,
        };
        // Holding the slot, wait for the lagging connections (first come, first served still).
        while !self.room(nodes) {
            if until.is_some_and(|u| Instant::now() >= u) {
                crate::observe::overloaded(since.elapsed());
                return Err(LockError::Overloaded {
                    waited: since.elapsed(),
                });
            }
            tokio::time::sleep(LAG_RECHECK).await;
        }
        crate::observe::admitted_after(since.elapsed());
        // The semaphore is never closed, so `acquire` only fails if it were: run without a slot then.
        Ok(Admitted {
            _permit: permit.ok(),
        })
    }

    /// Rounds that may start now without waiting.
    #[cfg(test)]
    pub(crate) fn free(&self) -> usize {
        self.permits.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn admits_up_to_the_bound_then_queues_in_order() {
        let gate = Admission::new(2, 64);
        let a = gate.enter(&[], None).await.unwrap();
        let _b = gate.enter(&[], None).await.unwrap();
        assert_eq!(gate.free(), 0);
        let soon = Instant::now() + Duration::from_millis(20);
        match gate.enter(&[], Some(soon)).await {
            Err(LockError::Overloaded { waited }) => assert!(waited >= Duration::from_millis(19)),
            other => panic!("expected Overloaded, got {other:?}"),
        }
        drop(a);
        let c = gate.enter(&[], Some(Instant::now())).await;
        assert!(c.is_ok(), "a freed slot is taken at once");
    }

    #[tokio::test]
    async fn a_dropped_waiter_leaves_the_line() {
        let gate = Admission::new(1, 64);
        let held = gate.enter(&[], None).await.unwrap();
        {
            let wait = gate.enter(&[], None);
            let _ = tokio::time::timeout(Duration::from_millis(5), wait).await;
        }
        drop(held);
        assert_eq!(gate.free(), 1, "the cancelled waiter did not keep a slot");
    }
}
