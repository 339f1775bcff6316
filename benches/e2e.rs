//! End-to-end regression benches against real redis-server processes on loopback, which this bench starts
//! itself on free ports (the workspace's test kit, `testkit/`) and stops when it is done.
//!
//! Kept apart from `benches/logic.rs`: these numbers include the kernel's loopback, the Redis nodes and the
//! runtime, all sharing the machine's cores, so they move more from run to run.
//!
//! Groups (each named `e2e_*`, so `cargo bench --bench e2e -- e2e_extend` runs one), each over the
//! `const CONFIGS` matrix of transport × node count, named `<transport>_n<nodes>`:
//! - `e2e_acquire_release`: one acquire then its release, one after the other (latency of a lock cycle).
//! - `e2e_batch64`: 64 acquire+release cycles on distinct keys, all in flight at once (throughput with
//!   the pipeline full); reported per lock cycle as well.
//! - `e2e_extend`: extending a held lock (one owner-checked script round).
//! - `e2e_observe`: `e2e_acquire_release` on `pipeline_n3` with nothing installed (`none`), then with a
//!   metrics recorder and a DEBUG `tracing` subscriber installed (`recorder_subscriber`, both scoped to
//!   this benchmark), then nothing again (`none_again`): observability's share of a real lock cycle. `benches/observe.rs` measures the
//!   observe calls alone, precisely; see `results/benches/observe.md`.
//!
//! Everything runs on a tokio current-thread runtime, as a latency-minded client would, so the numbers
//! measure the engine rather than cross-thread wake-ups.

mod support;

use support::e2e::{connected, criterion, cycle, runtime, TTL};

use std::fmt;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use redlock_engine::{Redlock, Transport, Wait};
use tokio::runtime::Runtime;
use tracing::Level;

/// Concurrent lock cycles in `e2e_batch64`.
const BATCH: usize = 64;

/// One end-to-end configuration: which transport, over how many nodes.
#[derive(Debug, Clone, Copy)]
struct Config {
    transport: Transport,
    nodes: usize,
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let transport = format!("{:?}", self.transport).to_lowercase();
        write!(f, "{transport}_n{}", self.nodes)
    }
}

/// The engine's own transport on N = 1, 3, 5.
const CONFIGS: &[Config] = &[
    Config {
        transport: Transport::Pipeline,
        nodes: 1,
    },
    Config {
        transport: Transport::Pipeline,
        nodes: 3,
    },
    Config {
        transport: Transport::Pipeline,
        nodes: 5,
    },
];

/// The fred transport on the usual N = 3, for comparison.
#[cfg(feature = "fred")]
const FRED_CONFIGS: &[Config] = &[Config {
    transport: Transport::Fred,
    nodes: 3,
}];
#[cfg(not(feature = "fred"))]
const FRED_CONFIGS: &[Config] = &[];

/// Most nodes any configuration uses: the bench starts this many once and gives each engine a prefix.
const MAX_NODES: usize = 5;

fn configs() -> impl Iterator<Item = &'static Config> {
    CONFIGS.iter().chain(FRED_CONFIGS)
}

/// An engine on the first `config.nodes` of `urls`, with every node connected.
fn engine(rt: &Runtime, urls: &[String], config: &Config) -> Redlock {
    let builder = Redlock::builder()
        .nodes(urls[..config.nodes].to_vec())
        .transport(config.transport);
    connected(rt, builder, config.nodes, &config.to_string())
}

fn bench_acquire_release(c: &mut Criterion, rt: &Runtime, urls: &[String]) {
    let mut group = c.benchmark_group("e2e_acquire_release");
    group.throughput(Throughput::Elements(1));
    for config in configs() {
        let engine = engine(rt, urls, config);
        group.bench_with_input(BenchmarkId::from_parameter(config), &engine, |b, engine| {
            b.to_async(rt).iter(|| cycle(engine, b"bench:single"))
        });
    }
    group.finish();
}

fn bench_batch(c: &mut Criterion, rt: &Runtime, urls: &[String]) {
    let resources: Vec<Vec<u8>> = (0..BATCH)
        .map(|i| format!("bench:batch:{i}").into_bytes())
        .collect();
    let mut group = c.benchmark_group("e2e_batch64");
    group.throughput(Throughput::Elements(BATCH as u64));
    for config in configs() {
        let engine = engine(rt, urls, config);
        group.bench_with_input(BenchmarkId::from_parameter(config), &engine, |b, engine| {
            b.to_async(rt)
                .iter(|| futures::future::join_all(resources.iter().map(|r| cycle(engine, r))))
        });
    }
    group.finish();
}

fn bench_extend(c: &mut Criterion, rt: &Runtime, urls: &[String]) {
    let mut group = c.benchmark_group("e2e_extend");
    group.throughput(Throughput::Elements(1));
    for config in configs() {
        let engine = engine(rt, urls, config);
        group.bench_with_input(BenchmarkId::from_parameter(config), &engine, |b, engine| {
            // One lock per sample, extended `iters` times; only the extends are timed.
            b.to_async(rt).iter_custom(|iters| async move {
                let mut lock = engine
                    .lock(b"bench:extend")
                    .ttl(TTL)
                    .wait(Wait::Configured)
                    .await
                    .expect("acquire")
                    .into_lock();
                let start = Instant::now();
                for _ in 0..iters {
                    engine.extend(&mut lock, TTL).await.expect("extend");
                }
                let elapsed = start.elapsed();
                engine.release(lock).await.expect("release");
                elapsed
            })
        });
    }
    group.finish();
}

fn bench_observe(c: &mut Criterion, rt: &Runtime, urls: &[String]) {
    let config = Config {
        transport: Transport::Pipeline,
        nodes: 3,
    };
    let mut group = c.benchmark_group("e2e_observe");
    group.throughput(Throughput::Elements(1));
    // Nothing installed first: `tracing` keeps a dropped scoped subscriber's max level until the next
    // one registers, so the order matters (see `benches/observe.rs`).
    let plain = engine(rt, urls, &config);
    group.bench_with_input(BenchmarkId::new("none", config), &plain, |b, engine| {
        b.to_async(rt).iter(|| cycle(engine, b"bench:observe"))
    });
    // The recorder must be in place when the engine registers its handles, as in production.
    let observed =
        metrics::with_local_recorder(&support::AtomicRecorder, || engine(rt, urls, &config));
    tracing::subscriber::with_default(support::subscriber(Level::DEBUG), || {
        group.bench_with_input(
            BenchmarkId::new("recorder_subscriber", config),
            &observed,
            |b, engine| b.to_async(rt).iter(|| cycle(engine, b"bench:observe")),
        );
    });
    // Nothing installed again (A-B-A): on a shared machine the load drifts between benchmarks, and the
    // two plain runs bracket the observed one.
    group.bench_with_input(
        BenchmarkId::new("none_again", config),
        &plain,
        |b, engine| b.to_async(rt).iter(|| cycle(engine, b"bench:observe")),
    );
    group.finish();
}

fn e2e(c: &mut Criterion) {
    // Dropped (killed) at the end of this function, and on a panic as the stack unwinds.
    let nodes = testkit::nodes(MAX_NODES);
    let urls = testkit::urls(&nodes);
    let rt = runtime();
    bench_acquire_release(c, &rt, &urls);
    bench_batch(c, &rt, &urls);
    bench_extend(c, &rt, &urls);
    bench_observe(c, &rt, &urls);
}

criterion_group! {
    name = benches;
    config = criterion();
    targets = e2e
}
criterion_main!(benches);
