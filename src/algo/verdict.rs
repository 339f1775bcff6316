//! What a lost round means for the caller: a [`Tally`] turned into the [`LockError`] to return. Pure
//! logic; the one place these rules are written.

use crate::error::LockError;

use super::quorum::Tally;

/// Why an acquire attempt lost: "contended" when other owners account for at least as many refusals
/// as node failures do (the lock is held elsewhere; waiters subscribe to its release), else "quorum not
/// reached".
pub(crate) fn acquire_error(tally: Tally) -> LockError {
    if let Some(found) = tally.mismatch {
        // The caller's own count is filled in by the semaphore's methods, which know it.
        return LockError::PermitsMismatch { permits: 0, found };
    }
    if tally.taken > 0 && tally.taken >= tally.failures.len() {
        LockError::Contended {
            taken: tally.taken,
            nodes: tally.nodes,
            local: false,
            // Known when the kind's acquire says its holder's time left (the fenced kind's).
            retry_after: tally.free_in(),
            holder: None,
        }
    } else {
        quorum_not_reached(tally)
    }
}

/// Why a release or extend round was lost.
///
/// Only the nodes that confirmed the lock (`held`, a bit per node) can tell: a node that never had our
/// key answers "gone" (or shows a contender's key) whatever happened to the lock.
pub(crate) fn owner_error(tally: Tally, held: u16) -> LockError {
    let failed_held = tally
        .failures
        .iter()
        .any(|(index, _)| held & 1u16.checked_shl(*index as u32).unwrap_or(0) != 0);
    if tally.taken_mask & held != 0 {
        LockError::NotOwner
    } else if tally.gone_mask & held != 0 && !failed_held {
        LockError::AlreadyExpired
    } else {
        quorum_not_reached(tally)
    }
}

fn quorum_not_reached(tally: Tally) -> LockError {
    LockError::QuorumNotReached {
        ok: tally.yes,
        needed: tally.quorum(),
        failures: tally.failures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::quorum::Vote;
    use crate::error::NodeError;

    #[test]
    fn only_nodes_that_held_the_lock_tell_why_it_was_lost() {
        // Held on nodes 0..=2 of 5; nodes 3 and 4 never had it.
        let held = 0b00111;
        let mut t = Tally::new(5);
        t.record(3, Vote::Taken);
        t.record(4, Vote::Gone);
        t.record(0, Vote::Gone);
        assert!(matches!(
            owner_error(t.clone(), held),
            LockError::AlreadyExpired
        ));
        t.record(1, Vote::Taken);
        assert!(matches!(owner_error(t, held), LockError::NotOwner));
        let mut t = Tally::new(5);
        t.record(0, Vote::Gone);
        t.record(1, Vote::Failed(NodeError::Timeout));
        assert!(matches!(
            owner_error(t, held),
            LockError::QuorumNotReached { .. }
        ));
    }

    #[test]
    fn refusals_by_owners_are_contention_failures_are_not() {
        let mut t = Tally::new(3);
        t.record(0, Vote::Taken);
        t.record(1, Vote::Failed(NodeError::Timeout));
        assert!(matches!(
            acquire_error(t),
            LockError::Contended { taken: 1, .. }
        ));
        let mut t = Tally::new(3);
        t.record(0, Vote::Failed(NodeError::Timeout));
        t.record(1, Vote::Failed(NodeError::Disconnected));
        assert!(matches!(
            acquire_error(t),
            LockError::QuorumNotReached {
                ok: 0,
                needed: 2,
                ..
            }
        ));
    }
}
