//! The simulation core both models share: a seeded RNG and a time-ordered event queue. Deterministic
//! per seed, no dependency, so a failing seed replays exactly.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// xorshift64*.
pub struct Rng(u64);

impl Rng {
    /// The generator for `seed` (any `u64`, 0 included: the state is never 0).
    pub fn seeded(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform-ish in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Events by time; events at the same time in the order they were pushed.
pub struct Queue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
}

impl<E> Queue<E> {
    pub fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Schedules `ev` at time `at`.
    pub fn push(&mut self, at: u64, ev: E) {
        self.seq += 1;
        self.heap.push(Entry {
            at,
            seq: self.seq,
            ev,
        });
    }

    /// The earliest event and its time, if it is due by `until`: a run ends at the first event past
    /// its end (left queued).
    pub fn pop_until(&mut self, until: u64) -> Option<(u64, E)> {
        if self.heap.peek()?.at > until {
            return None;
        }
        self.heap.pop().map(|e| (e.at, e.ev))
    }
}

struct Entry<E> {
    at: u64,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq)) // reversed: BinaryHeap is a max-heap
    }
}
