//! loadgen: throughput and latency of redlock-engine under contention, side by side with the `rslock`
//! crate, the raw command stream and the Redis-side ceiling.
//!
//! # Layout
//! - `main.rs`: thin — the allocator and [`app::main`].
//! - [`app`]: one invocation: options → nodes → runtime → [`session`] → outputs; exit codes, signals.
//! - [`session`]: every scenario × engine in run order, the ceiling once, then contention or overload;
//!   status lines, the [`report::Report`] and its notes.
//! - [`cli`]: clap options ([`cli::options`]) and their validation ([`cli::plan`]) into a [`cli::Plan`];
//!   [`units`]: `10s`, `100k`, `1ms..5ms`.
//! - [`workload`]: scenarios (and the contention layouts), workload knobs, key picking (uniform, zipf).
//! - [`nodes`]: spawned servers (`--server`: which binary; stopped on every way out), pre-run checks
//!   (each server's name and version from `INFO server`), the mid-run health monitor.
//! - [`engines`]: the [`engines::LockClient`] trait and one file per engine; the redis-benchmark ceiling.
//! - [`overload`]: the overload scenarios — burst, held (renewed locks: [`overload::held`], one
//!   file per engine family), overload — their options, CPU counters and table.
//! - [`worker`]: one worker's acquire-hold-release loop; [`run`]: one engine on one scenario;
//!   [`measure`]: one run (in this process or over [`procs`]) as a report record, its status line.
//! - [`contention`]: `--scenario contention`: 64 workers on 4 keys in 1, 4 and 16
//!   processes, the exclusive and the fair lock, one row each ([`report::ContentionRow`]); their
//!   ratios and table are [`report::contention`], their JSON part in [`report::json`].
//! - [`election`]: `--scenario election`: leader failover after `kill -9` (candidate and observer
//!   processes: loadgen re-executed), observers' delay, the servers' CPU for holding elections vs
//!   renewed locks; its own table and JSON document.
//! - [`procs`]: `--processes P`: one run spread over P loadgen processes, their records merged;
//!   [`procs::piped`]: a re-executed loadgen child and its pipes (the election's processes too).
//! - [`stats`]: per-worker histograms, merged; percentiles; Jain's fairness; [`overtakes`]: each
//!   grant's (start, grant) instants on the machine's monotonic clock, and the max overtakes.
//! - [`machine`]: machine and versions; [`report`]: the records, and their table, JSON, Markdown, SVG,
//!   ratios and goals.

pub mod app;
pub mod cli;
pub mod contention;
pub mod election;
pub mod engines;
pub mod machine;
pub mod measure;
pub mod nodes;
pub mod overload;
pub mod overtakes;
pub mod procs;
pub mod report;
pub mod run;
pub mod session;
pub mod stats;
pub mod units;
pub mod worker;
pub mod workload;
