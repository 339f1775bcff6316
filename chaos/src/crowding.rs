//! The semaphore checker: **never more than K holders with valid permits at once**, per resource.
//!
//! A holder relies on its permit (or slot) from the acquire's return until `min(valid_until, release
//! start)`, exactly as a lock holder in the overlap check ([`Grant::end`]): the grant happened on the
//! nodes before the return, and the holder stops claiming it when its validity ends or its release
//! starts. Those intervals of one resource are swept in time order; a grant whose return finds K
//! others still holding is **crowded** (K+1 holders at that instant), reported with who held. Ends are
//! swept before starts at the same instant: a release that starts exactly when another acquire returns
//! leaves no overlap, as in the overlap check.
//!
//! Every grant of a semaphore kind ([`LockKind::Permit`], [`LockKind::Slot`]) is counted against the
//! K it was asked with; grants of one resource that disagree on K are counted against the smallest
//! (the library refuses the larger K's callers on a node holding the other count, so a checker that
//! picked the larger would hide exactly that failure). Tasks of one process are holders like any other.

use std::collections::BTreeMap;

use crate::record::{Grant, LockKind};

/// What the sweep found over every semaphore grant.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Crowding {
    /// Semaphore grants checked.
    pub grants: usize,
    /// Grants that returned while K others still held: each is one instant with K+1 holders.
    pub crowded: usize,
    /// The most holders seen at once on any resource, and that resource's K.
    pub most: usize,
    pub most_k: u32,
    /// The first few crowded grants, described.
    pub examples: Vec<String>,
}

/// Checks every semaphore grant among `grants`, per resource.
pub fn check(grants: &[Grant]) -> Crowding {
    let mut by_resource: BTreeMap<&str, Vec<&Grant>> = BTreeMap::new();
    for g in grants.iter().filter(|g| g.kind.limit().is_some()) {
        by_resource.entry(&g.resource).or_default().push(g);
    }
    let mut c = Crowding::default();
    for (resource, list) in by_resource {
        c.grants += list.len();
        let k = list
            .iter()
            .filter_map(|g| g.kind.limit())
            .min()
            .unwrap_or(1);
        sweep(resource, k, list, &mut c);
    }
    c
}

/// One resource's grants against its `k`.
fn sweep(resource: &str, k: u32, mut list: Vec<&Grant>, c: &mut Crowding) {
    list.sort_by_key(|g| g.t1);
    // Holders so far, by end: the ones whose end is not after a new grant's return have let go.
    let mut holding: Vec<&Grant> = Vec::new();
    for g in list {
        holding.retain(|h| h.end() > g.t1);
        if g.end() <= g.t1 {
            // Returned already expired: it never held (the runner counts it as "expired at grant").
            continue;
        }
        if holding.len() >= k as usize {
            c.crowded += 1;
            if c.examples.len() < 3 {
                let others: Vec<String> = holding.iter().map(|h| describe(h, g.t1)).collect();
                c.examples.push(format!(
                    "{resource} (K = {k}): {} was granted while {} held: {}",
                    g.holder,
                    holding.len(),
                    others.join(", ")
                ));
            }
        }
        holding.push(g);
        if holding.len() > c.most {
            (c.most, c.most_k) = (holding.len(), k);
        }
    }
}

/// A holder at instant `t`: who, and how much longer it held.
fn describe(h: &Grant, t: u64) -> String {
    let kind = match h.kind {
        LockKind::Slot(_) => "slot",
        _ => "permit",
    };
    format!(
        "{} ({kind} for {:.1} ms more)",
        h.holder,
        (h.end() - t) as f64 / 1e6
    )
}

#[cfg(test)]
#[path = "crowding_tests.rs"]
mod tests;
