//! loadgen: throughput and latency of redlock-engine under contention, side by side with the `rslock`
//! crate, the raw command stream and the Redis-side ceiling (issue 3).
//!
//! # Layout
//! - `main.rs`: thin — the allocator and [`app::main`].
//! - [`app`]: one invocation: options → nodes → runtime → scenarios × engines → outputs; exit codes.
//! - [`cli`]: clap options and their validation into a [`cli::Plan`]; [`units`]: `10s`, `100k`, `1ms..5ms`.
//! - [`workload`]: scenarios, workload knobs, key picking (uniform, zipf).
//! - [`nodes`]: spawned redis-servers (stopped on every way out), pre-run checks, the mid-run health monitor.
//! - [`engines`]: the [`engines::LockClient`] trait and one file per engine; the redis-benchmark ceiling.
//! - [`overload`]: issue 14's overload scenarios — burst, held (renewed locks), overload — and their table.
//! - [`worker`]: one worker's acquire-hold-release loop; [`run`]: one engine on one scenario.
//! - [`procs`]: `--processes P`: one run spread over P loadgen processes, their records merged.
//! - [`stats`]: per-worker histograms, merged; percentiles; Jain's fairness.
//! - [`machine`]: machine and versions; [`report`]: table, JSON, Markdown, SVG, ratios and goals.

pub mod app;
pub mod cli;
pub mod engines;
pub mod machine;
pub mod nodes;
pub mod overload;
pub mod procs;
pub mod report;
pub mod run;
pub mod stats;
pub mod units;
pub mod worker;
pub mod workload;
