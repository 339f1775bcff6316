//! What the holder label costs (`Config::holder_label`): an exclusive acquire then its release on
//! three redis-server nodes this bench starts, without a label (`SET NX PX`) and with one (the
//! labeled acquire script, which also writes `prefix{resource}:holder`), in A-B-A order on one
//! engine pair so the load drift of a shared machine shows:
//! - `label_cycle`: one cycle at a time (`plain`, `labeled`, `plain_again`);
//! - `label_batch64`: 64 cycles on distinct keys in flight at once (throughput, per cycle).
//!
//! `cargo bench -p redlock-engine --bench label`

mod support;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use redlock_engine::Redlock;
use tokio::runtime::Runtime;

use support::e2e::{connected, criterion, cycle, runtime};

const BATCH: usize = 64;

fn engine(rt: &Runtime, urls: &[String], label: Option<&str>) -> Redlock {
    let builder = Redlock::builder()
        .nodes(urls.to_vec())
        .holder_label(label.map(String::from));
    connected(rt, builder, urls.len(), label.unwrap_or("plain"))
}

fn label(c: &mut Criterion) {
    let nodes = testkit::nodes(3);
    let urls = testkit::urls(&nodes);
    let rt = runtime();
    let plain = engine(&rt, &urls, None);
    let labeled = engine(&rt, &urls, Some("bench worker 7 on host-a: nightly export"));
    let order = [
        ("plain", &plain),
        ("labeled", &labeled),
        ("plain_again", &plain),
    ];
    let mut group = c.benchmark_group("label_cycle");
    group.throughput(Throughput::Elements(1));
    for (name, engine) in order {
        group.bench_with_input(BenchmarkId::new(name, "pipeline_n3"), engine, |b, e| {
            b.to_async(&rt).iter(|| cycle(e, b"bench:label"))
        });
    }
    group.finish();
    let resources: Vec<Vec<u8>> = (0..BATCH)
        .map(|i| format!("bench:label:{i}").into_bytes())
        .collect();
    let mut group = c.benchmark_group("label_batch64");
    group.throughput(Throughput::Elements(BATCH as u64));
    for (name, engine) in order {
        group.bench_with_input(BenchmarkId::new(name, "pipeline_n3"), engine, |b, e| {
            b.to_async(&rt)
                .iter(|| futures::future::join_all(resources.iter().map(|r| cycle(e, r))))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = criterion();
    targets = label
}
criterion_main!(benches);
