//! The semaphore's quorum, checked over every spread of K+1 holders over N nodes (no Redis: this is
//! the counting argument of `src/kinds/semaphore.rs`, searched exhaustively). A holder holds a permit
//! on each of its nodes; a node holds at most K. With `q = floor(K·N/(K+1)) + 1` nodes per holder, no
//! spread of K+1 holders fits; with one node fewer, and with a majority whenever `(K+1)·majority <=
//! K·N` (N = 5 and K >= 2, for one), some spread does.

use redlock_engine::__private::{permit_quorum, quorum};

/// Every `size`-subset of `n` nodes, as bitmasks.
fn subsets(n: usize, size: usize) -> Vec<u32> {
    (0u32..1 << n)
        .filter(|m| m.count_ones() as usize == size)
        .collect()
}

/// Whether `holders` holders of `q` nodes each fit on `n` nodes holding at most `k` permits each:
/// an exhaustive search over multisets of subsets (holders are interchangeable, so each takes a
/// subset no earlier in the list than the previous holder's), pruned as soon as a node is over `k`.
fn fits(n: usize, k: usize, q: usize, holders: usize) -> bool {
    let sets = subsets(n, q);
    let mut load = vec![0usize; n];
    fn place(sets: &[u32], from: usize, left: usize, k: usize, load: &mut [usize]) -> bool {
        if left == 0 {
            return true;
        }
        for (i, set) in sets.iter().enumerate().skip(from) {
            let nodes: Vec<usize> = (0..load.len()).filter(|b| set & (1 << b) != 0).collect();
            if nodes.iter().any(|&b| load[b] == k) {
                continue;
            }
            for &b in &nodes {
                load[b] += 1;
            }
            let ok = place(sets, i, left - 1, k, load);
            for &b in &nodes {
                load[b] -= 1;
            }
            if ok {
                return true;
            }
        }
        false
    }
    place(&sets, 0, holders, k, &mut load)
}

#[test]
fn the_permit_quorum_excludes_k_plus_one_holders_and_is_the_smallest_that_does() {
    for n in 1..=9usize {
        for k in 1..=(n + 2) {
            let q = permit_quorum(n, k as u64);
            assert!(
                !fits(n, k, q, k + 1),
                "N={n} K={k}: {} holders fit on q={q} nodes each",
                k + 1
            );
            assert!(
                fits(n, k, q, k),
                "N={n} K={k}: K holders must fit (the semaphore would be useless)"
            );
            if q > 1 {
                assert!(
                    fits(n, k, q - 1, k + 1),
                    "N={n} K={k}: q-1={} would already exclude K+1 holders",
                    q - 1
                );
            }
        }
    }
}

#[test]
fn a_majority_admits_k_plus_one_holders_exactly_when_the_count_allows() {
    let mut admitted = Vec::new();
    for n in 1..=7usize {
        for k in 1..=4usize {
            let majority = quorum(n);
            let by_count = (k + 1) * majority <= k * n;
            assert_eq!(
                fits(n, k, majority, k + 1),
                by_count,
                "N={n} K={k} majority={majority}"
            );
            if by_count {
                admitted.push((n, k));
            }
        }
    }
    // The cases the issue names: a majority is not enough for K >= 2 on 3 or 5 nodes.
    for case in [(5, 2), (5, 3), (5, 4), (3, 2), (3, 3), (7, 2)] {
        assert!(
            admitted.contains(&case),
            "{case:?}: a majority should admit K+1"
        );
    }
    // And never for K = 1: a majority is the mutex quorum.
    assert!(admitted.iter().all(|&(_, k)| k >= 2));
}

#[test]
fn the_availability_cost_for_five_nodes() {
    // Nodes that may be down: N - q.
    let spare: Vec<usize> = (1..=6).map(|k| 5 - permit_quorum(5, k)).collect();
    assert_eq!(spare, [2, 1, 1, 0, 0, 0]);
}
