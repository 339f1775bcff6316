//! Observability's cost on the hot path: "zero cost when no subscriber/recorder is installed",
//! measured. No Redis, no I/O, no runtime.
//!
//! Per acquire+release cycle the engine calls into `observe` twice: once after the acquire round
//! (`src/engine/acquire.rs`) and once after the release round (`src/engine/release.rs`), each time
//! `Metrics::round(op, &tally, start.elapsed())` — one clock read for the duration (the round's start
//! is read anyway, for its deadline), a won/lost counter, a duration histogram, a counter per failed node,
//! and one `tracing::debug!` event. A retry adds one counter increment (not measured: it follows a
//! random pause of milliseconds).
//!
//! Groups (each named `observe_*`, so `cargo bench --bench observe -- observe_cycle` runs one):
//! - `observe_cycle`: exactly those two calls, on N = 3, named `<setting>/<votes>`. Settings, in the order
//!   they run: `none` (the default), `recorder` (a minimal metrics recorder, installed while the handles
//!   are registered, as a user installs it before building the engine), `subscriber_info` (a `fmt`
//!   subscriber at INFO: the engine's DEBUG events filtered out), `subscriber_debug` (every event
//!   formatted to `io::sink`), `both` (recorder + `subscriber_debug`), and `none_after_scoped` (nothing
//!   installed again, after the scoped subscribers have come and gone). Votes: `all_yes` (the happy
//!   path), `one_timeout` (one node timed out in both rounds: one more counter, a non-empty failure list).
//! - `observe_no_clock`: the same two calls with fixed durations (no clock read), `none` and `recorder`,
//!   `all_yes`: what `Metrics::round` itself costs.
//! - `observe_clock`: the cycle's two extra clock reads alone, on `tokio::time::Instant` (what the engine
//!   uses) and `std::time::Instant`. The benches build tokio with `test-util` (a dev-dependency), whose
//!   `Instant::now` first checks for a paused clock; the library alone does not.
//!
//! `none_after_scoped` must run last: `tracing` recomputes its global max level only when a dispatcher is
//! registered, so a dropped scoped subscriber leaves the `debug!` call sites enabled (see
//! `results/benches/observe.md`).

mod support;

use std::fmt;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use redlock_engine::__private::{Observe, Tally, Vote};
use redlock_engine::NodeError;
use tracing::Level;

/// Nodes per engine: the usual N = 3.
const NODES: usize = 3;

/// Every benchmark here takes nanoseconds: short runs, and no plots (on a loaded 2-core machine drawing
/// them took longer than measuring), keep the whole target under a minute.
fn criterion() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .without_plots()
}

/// What is installed while a benchmark runs.
#[derive(Debug, Clone, Copy)]
enum Setting {
    None,
    Recorder,
    SubscriberInfo,
    SubscriberDebug,
    Both,
    NoneAfterScoped,
}

/// In the order they must run (see the module docs).
const SETTINGS: [Setting; 6] = [
    Setting::None,
    Setting::Recorder,
    Setting::SubscriberInfo,
    Setting::SubscriberDebug,
    Setting::Both,
    Setting::NoneAfterScoped,
];

impl Setting {
    fn recorder(self) -> bool {
        matches!(self, Self::Recorder | Self::Both)
    }

    fn subscriber(self) -> Option<Level> {
        match self {
            Self::SubscriberInfo => Some(Level::INFO),
            Self::SubscriberDebug | Self::Both => Some(Level::DEBUG),
            Self::None | Self::Recorder | Self::NoneAfterScoped => None,
        }
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::None => "none",
            Self::Recorder => "recorder",
            Self::SubscriberInfo => "subscriber_info",
            Self::SubscriberDebug => "subscriber_debug",
            Self::Both => "both",
            Self::NoneAfterScoped => "none_after_scoped",
        })
    }
}

/// How the cycle's two rounds were decided.
#[derive(Debug, Clone, Copy)]
enum Votes {
    /// Every node answered yes: decided on the second of three.
    AllYes,
    /// Node 0 timed out, nodes 1 and 2 said yes.
    OneTimeout,
}

impl Votes {
    /// The decided tallies of the acquire and the release round.
    fn tallies(self) -> (Tally, Tally) {
        let fill = |mut tally: Tally| {
            if let Self::OneTimeout = self {
                tally.record(0, Vote::Failed(NodeError::Timeout));
            }
            tally.record(1, Vote::Yes);
            tally.record(2, Vote::Yes);
            assert!(tally.won(), "{self:?}: the benchmarked rounds are won");
            tally
        };
        (fill(Tally::new(NODES)), fill(Tally::for_release(NODES)))
    }
}

impl fmt::Display for Votes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::AllYes => "all_yes",
            Self::OneTimeout => "one_timeout",
        })
    }
}

/// The observe calls of one acquire+release cycle, as the engine makes them: the durations are read from
/// the rounds' start instants, which the engine has anyway (for the node deadline).
fn cycle(observe: &Observe, acquire: &Tally, release: &Tally, start: tokio::time::Instant) {
    observe.acquire_round(acquire, start.elapsed());
    observe.release_round(release, start.elapsed());
}

fn bench_cycle(c: &mut Criterion) {
    let mut group = c.benchmark_group("observe_cycle");
    for setting in SETTINGS {
        let observe = observe(setting);
        for votes in [Votes::AllYes, Votes::OneTimeout] {
            let (acquire, release) = votes.tallies();
            let start = tokio::time::Instant::now();
            let mut run = || {
                group.bench_function(BenchmarkId::new(setting.to_string(), votes), |b| {
                    b.iter(|| {
                        cycle(
                            black_box(&observe),
                            black_box(&acquire),
                            black_box(&release),
                            black_box(start),
                        )
                    })
                });
            };
            match setting.subscriber() {
                Some(level) => tracing::subscriber::with_default(support::subscriber(level), run),
                None => run(),
            }
        }
    }
    group.finish();
}

/// Registers the handles as building an engine does: with the recorder in place, or not.
fn observe(setting: Setting) -> Observe {
    if setting.recorder() {
        metrics::with_local_recorder(&support::AtomicRecorder, || Observe::new(NODES))
    } else {
        Observe::new(NODES)
    }
}

fn bench_no_clock(c: &mut Criterion) {
    let mut group = c.benchmark_group("observe_no_clock");
    let (acquire, release) = Votes::AllYes.tallies();
    let took = Duration::from_micros(80);
    for setting in [Setting::None, Setting::Recorder] {
        let observe = observe(setting);
        group.bench_function(BenchmarkId::new(setting.to_string(), Votes::AllYes), |b| {
            b.iter(|| {
                let observe = black_box(&observe);
                observe.acquire_round(black_box(&acquire), black_box(took));
                observe.release_round(black_box(&release), black_box(took));
            })
        });
    }
    group.finish();
}

fn bench_clock(c: &mut Criterion) {
    let mut group = c.benchmark_group("observe_clock");
    let tokio_start = tokio::time::Instant::now();
    group.bench_function("tokio_two_elapsed", |b| {
        b.iter(|| {
            let start = black_box(tokio_start);
            (start.elapsed(), start.elapsed())
        })
    });
    let std_start = std::time::Instant::now();
    group.bench_function("std_two_elapsed", |b| {
        b.iter(|| {
            let start = black_box(std_start);
            (start.elapsed(), start.elapsed())
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = criterion();
    targets = bench_clock, bench_no_clock, bench_cycle
}
criterion_main!(benches);
