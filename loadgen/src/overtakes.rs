//! "Max overtakes": for each grant, how many waiters of the same key *began* waiting (their acquire
//! call started) after it and were granted before it. Reported as the maximum over all grants and the
//! mean per grant, across every worker of every process.
//!
//! Per cycle a worker only appends one [`Grant`] (three integers) to a buffer reserved up front; the
//! counting runs after the measured phase: per key, grants in grant order, a Fenwick tree over start
//! ranks counts the earlier grants that started later (`O(n log n)`).
//!
//! # The clock
//! `CLOCK_MONOTONIC`, read with `clock_gettime`: one clock for every process of the machine (the
//! processes of a `--processes` run compare their instants directly), unaffected by wall-clock steps.
//!
//! # Reading it
//! An acquire call's start is not the instant the fair lock orders by: its guarantee is for waiters
//! whose **enqueue completed** (one round after the call started, two when the nodes' tickets
//! disagreed) before the other's call began. Two calls started within those round trips of each other may be
//! granted in either order, so a few overtakes are allowed by the fair lock's property; a count
//! that grows with the queue length is not. Acquires that failed (timed out) are not grants and are
//! not counted, though they were overtaken too.

use serde::Serialize;

/// One successful acquire: which key, when its call started, when it returned granted (ns on
/// [`now_ns`]'s clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Grant {
    /// Key index.
    pub key: u64,
    /// The acquire call started.
    pub start_ns: u64,
    /// The acquire call returned the lock.
    pub grant_ns: u64,
}

/// Overtakes over a run's grants.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Overtakes {
    /// The most waiters that started after one grant's waiter and were granted before it.
    pub max: u64,
    /// Overtakes summed over every grant, divided by the grants.
    pub per_grant: f64,
    /// Grants counted.
    pub grants: u64,
}

/// Nanoseconds on `CLOCK_MONOTONIC`, the clock every process of the machine shares.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux (vDSO, no
    // system call).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// Counts the overtakes among `grants` (reordered in place).
pub fn count(grants: &mut [Grant]) -> Overtakes {
    grants.sort_unstable_by_key(|g| (g.key, g.grant_ns, g.start_ns));
    let (mut max, mut total) = (0u64, 0u64);
    let mut tree = Vec::new();
    for same_key in grants.chunk_by(|a, b| a.key == b.key) {
        // Rank of each grant's start among this key's starts (ties share the lowest rank: a
        // waiter that started at the same instant did not start *after*).
        let mut starts: Vec<u64> = same_key.iter().map(|g| g.start_ns).collect();
        starts.sort_unstable();
        tree.clear();
        tree.resize(starts.len() + 1, 0u32);
        let mut seen = 0u64;
        // Grants at the same instant did not come *before* each other: query them all first.
        for same_instant in same_key.chunk_by(|a, b| a.grant_ns == b.grant_ns) {
            for g in same_instant {
                let rank = starts.partition_point(|&s| s <= g.start_ns);
                // Earlier grants whose start is later than ours.
                let overtook = seen - prefix(&tree, rank);
                max = max.max(overtook);
                total += overtook;
            }
            for g in same_instant {
                add(&mut tree, starts.partition_point(|&s| s < g.start_ns) + 1);
                seen += 1;
            }
        }
    }
    Overtakes {
        max,
        per_grant: total as f64 / grants.len().max(1) as f64,
        grants: grants.len() as u64,
    }
}

/// Fenwick tree (1-based): how many inserted ranks are `<= rank`.
fn prefix(tree: &[u32], mut rank: usize) -> u64 {
    let mut sum = 0u64;
    while rank > 0 {
        sum += u64::from(tree[rank]);
        rank &= rank - 1;
    }
    sum
}

fn add(tree: &mut [u32], mut rank: usize) {
    while rank < tree.len() {
        tree[rank] += 1;
        rank += rank & rank.wrapping_neg();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(key: u64, start_ns: u64, grant_ns: u64) -> Grant {
        Grant {
            key,
            start_ns,
            grant_ns,
        }
    }

    /// The definition, by brute force.
    fn naive(grants: &[Grant]) -> (u64, u64) {
        let per: Vec<u64> = grants
            .iter()
            .map(|a| {
                grants
                    .iter()
                    .filter(|b| {
                        b.key == a.key && b.start_ns > a.start_ns && b.grant_ns < a.grant_ns
                    })
                    .count() as u64
            })
            .collect();
        (per.iter().copied().max().unwrap_or(0), per.iter().sum())
    }

    #[test]
    fn fifo_grants_have_no_overtakes_and_a_lifo_queue_has_many() {
        let fifo: Vec<Grant> = (0..10).map(|i| g(0, i, 100 + i)).collect();
        assert_eq!(count(&mut fifo.clone()).max, 0);
        // The first waiter is served last: everyone after it overtook it.
        let mut lifo: Vec<Grant> = (0..10).map(|i| g(0, i, 200 - i)).collect();
        let o = count(&mut lifo);
        assert_eq!((o.max, o.grants), (9, 10));
        assert!((o.per_grant - 4.5).abs() < 1e-9);
        // Other keys are other queues.
        let mut two = vec![g(0, 1, 10), g(1, 2, 5)];
        assert_eq!(count(&mut two).max, 0);
    }

    #[test]
    fn matches_the_definition_on_random_grants_with_ties() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..200 {
            let n = rng.usize(1..60);
            let grants: Vec<Grant> = (0..n)
                .map(|_| {
                    let start = rng.u64(0..40);
                    g(rng.u64(0..3), start, start + rng.u64(0..40))
                })
                .collect();
            let (max, total) = naive(&grants);
            let o = count(&mut grants.clone());
            assert_eq!(o.max, max, "{grants:?}");
            assert!((o.per_grant - total as f64 / n as f64).abs() < 1e-9);
        }
    }

    #[test]
    fn the_clock_moves_forward() {
        let a = now_ns();
        let b = now_ns();
        assert!(a > 0 && b >= a);
    }
}
