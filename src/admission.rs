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
//! A wait that outlasts the caller's budget is [`LockError::Overloaded`]: the truth (nothing was
//! asked of the nodes), not a timeout blamed on them.

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

use crate::error::LockError;

/// The engine's round gate.
#[derive(Debug)]
pub(crate) struct Admission {
    permits: Semaphore,
}

/// One admitted round; the slot is given back when it is dropped (the round decided).
#[derive(Debug)]
pub(crate) struct Admitted<'a> {
    _permit: Option<SemaphorePermit<'a>>,
}

impl Admission {
    pub(crate) fn new(max_in_flight: usize) -> Self {
        Self {
            permits: Semaphore::new(max_in_flight),
        }
    }

    /// Waits for a slot until `until` (`None`: as long as it takes).
    ///
    /// # Errors
    /// [`LockError::Overloaded`] when `until` passes first.
    pub(crate) async fn enter(&self, until: Option<Instant>) -> Result<Admitted<'_>, LockError> {
        // The uncontended path: one atomic, no clock read, no timer.
        if let Ok(permit) = self.permits.try_acquire() {
            return Ok(Admitted {
                _permit: Some(permit),
            });
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
    use std::time::Duration;

    #[tokio::test]
    async fn admits_up_to_the_bound_then_queues_in_order() {
        let gate = Admission::new(2);
        let a = gate.enter(None).await.unwrap();
        let _b = gate.enter(None).await.unwrap();
        assert_eq!(gate.free(), 0);
        let soon = Instant::now() + Duration::from_millis(20);
        match gate.enter(Some(soon)).await {
            Err(LockError::Overloaded { waited }) => assert!(waited >= Duration::from_millis(19)),
            other => panic!("expected Overloaded, got {other:?}"),
        }
        drop(a);
        let c = gate.enter(Some(Instant::now())).await;
        assert!(c.is_ok(), "a freed slot is taken at once");
    }

    #[tokio::test]
    async fn a_dropped_waiter_leaves_the_line() {
        let gate = Admission::new(1);
        let held = gate.enter(None).await.unwrap();
        {
            let wait = gate.enter(None);
            let _ = tokio::time::timeout(Duration::from_millis(5), wait).await;
        }
        drop(held);
        assert_eq!(gate.free(), 1, "the cancelled waiter did not keep a slot");
    }
}
