//! What the workers do: the scenarios, the per-run workload knobs, and how a worker picks its next key.

use std::time::Duration;

use clap::ValueEnum;
use serde::Serialize;

use crate::units::Hold;

/// How a worker picks the next key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// Every key equally likely.
    Uniform,
    /// Key k (from 1) picked in proportion to 1/k^s: a few hot keys.
    Zipf,
}

impl std::fmt::Display for Distribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Uniform => "uniform",
            Self::Zipf => "zipf",
        })
    }
}

/// Which lock redlock and redlock-fred take (`--lock`); the other engines only have the exclusive one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LockKind {
    /// `acquire`.
    #[default]
    Exclusive,
    /// `acquire_fair`: arrival order across processes.
    Fair,
    /// `acquire_permit(key, K)`: a counting semaphore of K permits.
    Permits(u32),
    /// `acquire_slot(key, K)`: a semaphore of K exclusive slots.
    Slots(u32),
}

impl std::fmt::Display for LockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exclusive => f.write_str("exclusive"),
            Self::Fair => f.write_str("fair"),
            Self::Permits(k) => write!(f, "permits:{k}"),
            Self::Slots(k) => write!(f, "slots:{k}"),
        }
    }
}

/// Parses `--lock`: `exclusive`, `fair`, `permits:K`, `slots:K`.
pub fn parse_lock(text: &str) -> Result<LockKind, String> {
    let count = |k: &str| {
        k.parse::<u32>()
            .ok()
            .filter(|k| *k > 0)
            .ok_or_else(|| format!("`{text}`: the count must be a whole number above zero"))
    };
    match text.split_once(':') {
        None if text == "exclusive" => Ok(LockKind::Exclusive),
        None if text == "fair" => Ok(LockKind::Fair),
        Some(("permits", k)) => count(k).map(LockKind::Permits),
        Some(("slots", k)) => count(k).map(LockKind::Slots),
        _ => Err(format!(
            "`{text}`: expected exclusive, fair, permits:K or slots:K"
        )),
    }
}

/// When a run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this much measured time.
    Duration(Duration),
    /// After this many acquire calls (successful or not) across all workers.
    Cycles(u64),
}

/// The knobs every run of a scenario shares.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Key distribution.
    pub distribution: Distribution,
    /// Zipf exponent.
    pub zipf_exponent: f64,
    /// Hold time between acquire and release.
    pub hold: Hold,
    /// Lock TTL.
    pub ttl: Duration,
    /// Attempts after the first.
    pub retries: u32,
    /// Base pause between attempts.
    pub retry_delay: Duration,
    /// Random extra pause, uniform in [0, jitter].
    pub retry_jitter: Duration,
    /// When a run ends.
    pub stop: Stop,
    /// Uncounted warm-up before each run.
    pub warmup: Duration,
    /// Which lock redlock takes.
    pub lock: LockKind,
}

/// One scenario: a worker count and a key count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    /// Short id used in ratios and file names: `a`, `b`, `c`, `custom`, `overload`, or a
    /// contention layout (`1x64`, `4x16`, `16x4`).
    pub id: &'static str,
    /// Human description.
    pub label: String,
    /// Workers.
    pub concurrency: usize,
    /// Keys.
    pub keys: u64,
}

impl Scenario {
    /// (a) 1 worker, distinct keys; (b) 64 workers, distinct keys; (c) 64 workers on 4 keys.
    pub fn standard() -> Vec<Scenario> {
        vec![
            Scenario {
                id: "a",
                label: "(a) 1 worker, distinct keys".into(),
                concurrency: 1,
                keys: 1_000_000,
            },
            Scenario {
                id: "b",
                label: "(b) 64 workers, distinct keys".into(),
                concurrency: 64,
                keys: 1_000_000,
            },
            Scenario {
                id: "c",
                label: "(c) 64 workers on 4 keys".into(),
                concurrency: 64,
                keys: 4,
            },
        ]
    }

    /// One row of the contention scenario: 64 workers on 4 keys, named by its layout and lock.
    pub fn contention(layout: Layout, lock: LockKind) -> Scenario {
        let spread = match layout.processes {
            1 => "1 process".to_string(),
            p => format!("{p} processes x {}", CONTENTION_WORKERS / p),
        };
        Scenario {
            id: layout.id,
            label: format!(
                "{CONTENTION_WORKERS} workers on {CONTENTION_KEYS} keys, {spread}, {lock}"
            ),
            concurrency: CONTENTION_WORKERS,
            keys: CONTENTION_KEYS,
        }
    }

    /// A custom run.
    pub fn custom(concurrency: usize, keys: u64) -> Scenario {
        Scenario {
            id: "custom",
            label: format!("{concurrency} workers on {keys} keys"),
            concurrency,
            keys,
        }
    }
}

/// Workers of every row of the contention scenario ([`crate::contention`]).
pub const CONTENTION_WORKERS: usize = 64;
/// Keys of every row of the contention scenario.
pub const CONTENTION_KEYS: u64 = 4;

/// How a contention row's workers are spread over loadgen processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// `1x64`, `4x16`, `16x4`: processes x workers per process (the row's scenario id).
    pub id: &'static str,
    /// loadgen processes.
    pub processes: usize,
}

/// The contention scenario's layouts, in run order: the one-process reference first.
pub const CONTENTION_LAYOUTS: [Layout; 3] = [
    Layout {
        id: "1x64",
        processes: 1,
    },
    Layout {
        id: "4x16",
        processes: 4,
    },
    Layout {
        id: "16x4",
        processes: 16,
    },
];

/// The locks of each contention layout, in run order.
pub const CONTENTION_LOCKS: [LockKind; 2] = [LockKind::Exclusive, LockKind::Fair];

/// Picks key indexes in `0..keys`.
#[derive(Debug, Clone)]
pub enum KeyPicker {
    /// Uniform over `0..n`.
    Uniform(u64),
    /// Zipf over `0..n` (index 0 is the hottest).
    Zipf(Zipf),
}

impl KeyPicker {
    /// The picker for `keys` keys.
    pub fn new(distribution: Distribution, keys: u64, exponent: f64) -> Self {
        match distribution {
            Distribution::Uniform => Self::Uniform(keys.max(1)),
            Distribution::Zipf => Self::Zipf(Zipf::new(keys.max(1), exponent)),
        }
    }

    /// The next key index.
    pub fn pick(&self, rng: &mut fastrand::Rng) -> u64 {
        match self {
            Self::Uniform(n) => rng.u64(0..*n),
            Self::Zipf(z) => z.sample(rng) - 1,
        }
    }
}

/// Zipf sampler by rejection-inversion (Hörmann and Derflinger, 1996): O(1) memory, so a million keys
/// need no table.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    threshold: f64,
}

impl Zipf {
    /// Ranks `1..=n` with exponent `s > 0`.
    pub fn new(n: u64, s: f64) -> Self {
        let mut z = Self {
            n: n as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            threshold: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(z.n + 0.5);
        z.threshold = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// A rank in `1..=n`.
    pub fn sample(&self, rng: &mut fastrand::Rng) -> u64 {
        loop {
            let u = self.h_n + rng.f64() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            let k = x.round().clamp(1.0, self.n);
            if k - x <= self.threshold || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// Integral of `h` (up to a constant).
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        if (self.s - 1.0).abs() < 1e-9 {
            log_x
        } else {
            (((1.0 - self.s) * log_x).exp() - 1.0) / (1.0 - self.s)
        }
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        if (self.s - 1.0).abs() < 1e-9 {
            x.exp()
        } else {
            let t = (x * (1.0 - self.s)).max(-1.0);
            ((1.0 + t).ln() / (1.0 - self.s)).exp()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_stays_in_range() {
        let p = KeyPicker::new(Distribution::Uniform, 4, 1.0);
        let mut rng = fastrand::Rng::with_seed(7);
        let mut seen = [0u32; 4];
        for _ in 0..4000 {
            seen[p.pick(&mut rng) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
    }

    #[test]
    fn zipf_follows_one_over_k() {
        for s in [1.0, 1.5] {
            let p = KeyPicker::new(Distribution::Zipf, 4, s);
            let mut rng = fastrand::Rng::with_seed(7);
            let mut seen = [0f64; 4];
            let draws = 200_000;
            for _ in 0..draws {
                seen[p.pick(&mut rng) as usize] += 1.0;
            }
            let norm: f64 = (1..=4).map(|k| (k as f64).powf(-s)).sum();
            for (i, count) in seen.iter().enumerate() {
                let expected = ((i + 1) as f64).powf(-s) / norm;
                let got = count / draws as f64;
                assert!(
                    (got - expected).abs() < 0.01,
                    "s={s} key {i}: {got} vs {expected}"
                );
            }
        }
    }

    #[test]
    fn zipf_over_a_million_keys_is_in_range() {
        let z = Zipf::new(1_000_000, 0.99);
        let mut rng = fastrand::Rng::with_seed(3);
        assert!((0..10_000)
            .map(|_| z.sample(&mut rng))
            .all(|k| (1..=1_000_000).contains(&k)));
    }
}

#[cfg(test)]
mod lock_kind_tests {
    use super::*;

    #[test]
    fn lock_kinds_parse_and_print_back() {
        for text in ["exclusive", "fair", "permits:4", "slots:2"] {
            assert_eq!(parse_lock(text).unwrap().to_string(), text);
        }
        for bad in ["", "permits", "permits:0", "slots:x", "fair:2", "mutex"] {
            assert!(parse_lock(bad).is_err(), "{bad}");
        }
    }
}

#[cfg(test)]
mod contention_tests {
    use super::*;

    #[test]
    fn layouts_split_the_same_workers() {
        for layout in CONTENTION_LAYOUTS {
            assert_eq!(CONTENTION_WORKERS % layout.processes, 0, "{layout:?}");
            let (p, w) = layout.id.split_once('x').unwrap();
            assert_eq!(p.parse::<usize>().unwrap(), layout.processes);
            assert_eq!(
                w.parse::<usize>().unwrap() * layout.processes,
                CONTENTION_WORKERS
            );
        }
        assert_eq!(
            CONTENTION_LAYOUTS[0].processes, 1,
            "the reference runs first"
        );
        let s = Scenario::contention(CONTENTION_LAYOUTS[1], LockKind::Fair);
        assert_eq!((s.id, s.concurrency, s.keys), ("4x16", 64, 4));
        assert_eq!(s.label, "64 workers on 4 keys, 4 processes x 16, fair");
    }
}
