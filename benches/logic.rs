//! Pure-logic regression benches: no Redis, no I/O, no runtime. These guard the hot path's arithmetic and
//! encoding, and are kept apart from `benches/e2e.rs` so network noise never hides a logic regression.
//!
//! Groups (each named `logic_*`, so `cargo bench --bench logic -- logic_tally` runs one):
//! - `logic_tally`: one quorum round, vote by vote until the early decision, over a `const CONFIGS` matrix
//!   of node counts and vote orders.
//! - `logic_timing`: the validity check an acquire makes once a majority is won, and the node deadline.
//! - `logic_retry`: sampling the random pause between attempts.
//! - `logic_lock_value`: drawing a lock value from the OS CSPRNG (one `getrandom` call).
//! - `logic_encode`: encoding one lock cycle's frames (SET NX PX + EVALSHA release) as the pipeline does.

use std::fmt;
use std::hint::black_box;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use redlock_engine::__private::{
    encode_cycle, quorum, Decision, LockValue, RetryPolicy, Tally, Timing, Vote,
};
use redlock_engine::NodeError;

/// Short runs are enough: every benchmark here takes nanoseconds, and the whole target stays near a minute.
fn criterion() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
}

// ---------------------------------------------------------------------------------------------------
// Quorum tally
// ---------------------------------------------------------------------------------------------------

/// The order in which a round's replies arrive.
#[derive(Debug, Clone, Copy)]
enum Order {
    /// Every node says yes: decided (won) after `quorum(n)` votes. The common case.
    AllYes,
    /// The minority times out first, then the rest say yes: won on the last vote, with failures recorded
    /// (the one allocating path).
    FailuresFirst,
    /// Another owner holds it everywhere: decided (lost) after `n - quorum(n) + 1` votes.
    AllTaken,
    /// Taken and yes alternate, taken first: the split vote, decided only at the last vote.
    Split,
}

impl Order {
    fn name(self) -> &'static str {
        match self {
            Self::AllYes => "all_yes",
            Self::FailuresFirst => "failures_first",
            Self::AllTaken => "all_taken",
            Self::Split => "split",
        }
    }

    /// Node `i`'s vote (of `n`) in this order.
    fn vote(self, i: usize, n: usize) -> Vote {
        match self {
            Self::AllYes => Vote::Yes,
            Self::FailuresFirst if i < n - quorum(n) => Vote::Failed(NodeError::Timeout),
            Self::FailuresFirst => Vote::Yes,
            Self::AllTaken => Vote::Taken,
            Self::Split if i % 2 == 0 => Vote::Taken,
            Self::Split => Vote::Yes,
        }
    }
}

/// One tally benchmark: `nodes` nodes answering in `order`.
#[derive(Debug, Clone, Copy)]
struct TallyConfig {
    nodes: usize,
    order: Order,
}

impl fmt::Display for TallyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}_{}", self.nodes, self.order.name())
    }
}

const fn tally(nodes: usize, order: Order) -> TallyConfig {
    TallyConfig { nodes, order }
}

/// N = 1, 3, 5, 9 (9 is `MAX_NODES`) × every vote order. N = 1 has no minority, so only two orders
/// differ there.
const TALLY_CONFIGS: &[TallyConfig] = &[
    tally(1, Order::AllYes),
    tally(1, Order::AllTaken),
    tally(3, Order::AllYes),
    tally(3, Order::FailuresFirst),
    tally(3, Order::AllTaken),
    tally(3, Order::Split),
    tally(5, Order::AllYes),
    tally(5, Order::FailuresFirst),
    tally(5, Order::AllTaken),
    tally(5, Order::Split),
    tally(9, Order::AllYes),
    tally(9, Order::FailuresFirst),
    tally(9, Order::AllTaken),
    tally(9, Order::Split),
];

/// Feeds votes in `order` until the tally decides, as the fan-out does, and returns the decision.
fn run_round(nodes: usize, order: Order) -> Decision {
    let mut tally = Tally::new(nodes);
    for i in 0..nodes {
        let decision = tally.record(i, order.vote(i, nodes));
        if decision != Decision::Open {
            return decision;
        }
    }
    Decision::Open
}

fn bench_tally(c: &mut Criterion) {
    let mut group = c.benchmark_group("logic_tally");
    for config in TALLY_CONFIGS {
        // Every order must decide: a benchmark of an undecided round would measure a bug.
        assert_ne!(
            run_round(config.nodes, config.order),
            Decision::Open,
            "{config}"
        );
        group.bench_with_input(BenchmarkId::from_parameter(config), config, |b, config| {
            b.iter(|| run_round(black_box(config.nodes), black_box(config.order)))
        });
    }
    group.finish();
}

// ---------------------------------------------------------------------------------------------------
// Timing, retry, lock value
// ---------------------------------------------------------------------------------------------------

/// One timing benchmark: a lock of `ttl` whose majority came back after `elapsed`.
#[derive(Debug, Clone, Copy)]
struct TimingConfig {
    name: &'static str,
    ttl: Duration,
    elapsed: Duration,
}

impl fmt::Display for TimingConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

const TIMING_CONFIGS: &[TimingConfig] = &[
    // The common case: plenty of validity left.
    TimingConfig {
        name: "granted",
        ttl: Duration::from_secs(10),
        elapsed: Duration::from_millis(1),
    },
    // Some validity left, but below the minimum: rejected.
    TimingConfig {
        name: "below_min",
        ttl: Duration::from_millis(100),
        elapsed: Duration::from_millis(90),
    },
    // Took longer than the TTL: the subtraction saturates to "nothing left".
    TimingConfig {
        name: "expired",
        ttl: Duration::from_millis(100),
        elapsed: Duration::from_millis(150),
    },
];

/// The engine's defaults: drift 1 %, node timeout 5 % of the TTL capped to 50 ms, minimum validity 10 %.
fn default_timing() -> Timing {
    Timing::new(0.01, None, 0.1)
}

/// The check an acquire makes after winning the majority: validity left, and at least the minimum.
fn grant(timing: &Timing, ttl: Duration, elapsed: Duration) -> Option<Duration> {
    timing
        .validity(ttl, elapsed)
        .filter(|v| *v >= timing.min_validity(ttl))
}

fn bench_timing(c: &mut Criterion) {
    let timing = default_timing();
    let mut group = c.benchmark_group("logic_timing");
    for config in TIMING_CONFIGS {
        group.bench_with_input(BenchmarkId::new("grant", config), config, |b, config| {
            b.iter(|| {
                grant(
                    black_box(&timing),
                    black_box(config.ttl),
                    black_box(config.elapsed),
                )
            })
        });
    }
    group.bench_function("node_timeout", |b| {
        b.iter(|| black_box(&timing).node_timeout(black_box(Duration::from_secs(10))))
    });
    group.finish();
}

/// One retry-policy benchmark.
#[derive(Debug, Clone, Copy)]
struct RetryConfig {
    delay: Duration,
    jitter: Duration,
}

impl fmt::Display for RetryConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "delay{}ms_jitter{}ms",
            self.delay.as_millis(),
            self.jitter.as_millis()
        )
    }
}

const RETRY_CONFIGS: &[RetryConfig] = &[
    // The default policy.
    RetryConfig {
        delay: Duration::from_millis(50),
        jitter: Duration::from_millis(50),
    },
    // No jitter: the random draw over `0..=0`.
    RetryConfig {
        delay: Duration::from_millis(50),
        jitter: Duration::ZERO,
    },
];

fn bench_retry(c: &mut Criterion) {
    let mut group = c.benchmark_group("logic_retry");
    for config in RETRY_CONFIGS {
        let policy = RetryPolicy::new(10, config.delay, config.jitter);
        group.bench_with_input(
            BenchmarkId::new("next_delay", config),
            &policy,
            |b, policy| b.iter(|| black_box(policy).next_delay()),
        );
    }
    group.finish();
}

fn bench_lock_value(c: &mut Criterion) {
    let mut group = c.benchmark_group("logic_lock_value");
    group.bench_function("random", |b| {
        b.iter(|| LockValue::random().expect("OS random source"))
    });
    group.finish();
}

// ---------------------------------------------------------------------------------------------------
// Request encoding
// ---------------------------------------------------------------------------------------------------

/// One encoding benchmark: a key of `key_len` bytes (prefix included).
#[derive(Debug, Clone, Copy)]
struct EncodeConfig {
    key_len: usize,
}

impl fmt::Display for EncodeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key{}B", self.key_len)
    }
}

/// A typical key (`redlock:` + a short resource name) and a long one.
const ENCODE_CONFIGS: &[EncodeConfig] =
    &[EncodeConfig { key_len: 24 }, EncodeConfig { key_len: 256 }];

fn bench_encode(c: &mut Criterion) {
    let value = LockValue::random().expect("OS random source");
    let mut group = c.benchmark_group("logic_encode");
    for config in ENCODE_CONFIGS {
        let mut key = b"redlock:".to_vec();
        key.resize(config.key_len, b'k');
        let key = Bytes::from(key);
        // Measure the encoding, not the allocator: the buffer is reused, as the pipeline's write buffer is.
        let mut out = BytesMut::with_capacity(1024);
        encode_cycle(&mut out, &key, value, 10_000);
        group.throughput(Throughput::Bytes(out.len() as u64));
        group.bench_with_input(BenchmarkId::new("cycle", config), &key, |b, key| {
            b.iter(|| {
                out.clear();
                encode_cycle(
                    &mut out,
                    black_box(key),
                    black_box(value),
                    black_box(10_000),
                );
                out.len()
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = criterion();
    targets = bench_tally, bench_timing, bench_retry, bench_lock_value, bench_encode
}
criterion_main!(benches);
