//! What crosses the pipes between the parent and its children: a child's command line (the parent's
//! options, rewritten so the child parses them back to the same workload) and the [`ChildResult`] it
//! sends back (see the parent module's "Merging").

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::cli::RuntimeKind;
use crate::engines::{EngineKind, Waiting};
use crate::overload::cpu::CpuUse;
use crate::run::RunOutput;
use crate::stats::{histogram, WorkerStats};
use crate::workload::{Stop, Workload};

/// What a child sends back: its workers' records, merged, plus the per-worker success counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildResult {
    /// Measured time, µs.
    pub elapsed_us: u64,
    /// Successful cycles of each worker.
    pub per_worker: Vec<u64>,
    /// Successful cycles.
    pub cycles: u64,
    /// Acquire calls.
    pub acquire_calls: u64,
    /// Attempts reported.
    pub attempts: u64,
    /// Acquire calls whose attempts were reported.
    pub attempts_known: u64,
    /// Failed acquires by cause.
    pub failed_acquires: BTreeMap<String, u64>,
    /// Failed releases by cause.
    pub failed_releases: BTreeMap<String, u64>,
    /// Acquire histogram as `[value, count]` per recorded bucket.
    pub acquire: Vec<[u64; 2]>,
    /// Release histogram, the same way.
    pub release: Vec<[u64; 2]>,
    /// This child's CPU over the measured phase, µs.
    pub client_cpu_us: u64,
    /// The servers' CPU over the measured phase as this child read it, seconds (each child's reading
    /// covers the whole phase: the parent keeps the largest, never the sum).
    pub server_cpu_s: Option<f64>,
    /// The servers' commands over the measured phase as this child read them (kept as the CPU is).
    #[serde(default)]
    pub server_calls: Option<u64>,
    /// Every grant as `[key, start_ns, grant_ns]` on the machine's monotonic clock, which all the
    /// processes share (see `crate::overtakes`): the parent counts overtakes across processes.
    #[serde(default)]
    pub grants: Vec<[u64; 3]>,
}

impl ChildResult {
    /// Packs a run's output.
    pub fn pack(out: &RunOutput) -> Self {
        let s = &out.stats;
        let names =
            |m: &BTreeMap<&'static str, u64>| m.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Self {
            elapsed_us: u64::try_from(out.elapsed.as_micros()).unwrap_or(u64::MAX),
            per_worker: out.per_worker.clone(),
            cycles: s.cycles,
            acquire_calls: s.acquire_calls,
            attempts: s.attempts,
            attempts_known: s.attempts_known,
            failed_acquires: names(&s.failed_acquires),
            failed_releases: names(&s.failed_releases),
            acquire: buckets(&s.acquire),
            release: buckets(&s.release),
            client_cpu_us: u64::try_from(out.cpu.client.as_micros()).unwrap_or(u64::MAX),
            server_cpu_s: out.cpu.server_s,
            server_calls: out.cpu.server_calls,
            grants: s
                .grants
                .iter()
                .map(|g| [g.key, g.start_ns, g.grant_ns])
                .collect(),
        }
    }

    /// The CPU it reports.
    pub fn cpu(&self) -> CpuUse {
        CpuUse {
            client: Duration::from_micros(self.client_cpu_us),
            server_s: self.server_cpu_s,
            server_calls: self.server_calls,
        }
    }

    /// The record it carries.
    pub fn unpack(&self) -> Result<(WorkerStats, Vec<u64>, Duration), String> {
        let causes = |m: &BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, v)| (crate::engines::cause::intern(k), *v))
                .collect::<BTreeMap<_, _>>()
        };
        let stats = WorkerStats {
            acquire: restore(&self.acquire)?,
            release: restore(&self.release)?,
            cycles: self.cycles,
            acquire_calls: self.acquire_calls,
            attempts: self.attempts,
            attempts_known: self.attempts_known,
            failed_acquires: causes(&self.failed_acquires),
            failed_releases: causes(&self.failed_releases),
            grants: self
                .grants
                .iter()
                .map(|&[key, start_ns, grant_ns]| crate::overtakes::Grant {
                    key,
                    start_ns,
                    grant_ns,
                })
                .collect(),
        };
        Ok((
            stats,
            self.per_worker.clone(),
            Duration::from_micros(self.elapsed_us),
        ))
    }
}

fn buckets(h: &Histogram<u64>) -> Vec<[u64; 2]> {
    h.iter_recorded()
        .map(|v| [v.value_iterated_to(), v.count_at_value()])
        .collect()
}

fn restore(pairs: &[[u64; 2]]) -> Result<Histogram<u64>, String> {
    let mut h = histogram();
    for &[value, count] in pairs {
        h.record_n(value, count)
            .map_err(|e| format!("a worker process sent a bad histogram value {value}: {e:?}"))?;
    }
    Ok(h)
}

/// `total` split into `parts` shares that differ by at most one, larger first.
pub fn split(total: u64, parts: usize) -> Vec<u64> {
    let parts = parts.max(1) as u64;
    (0..parts)
        .map(|i| total / parts + u64::from(i < total % parts))
        .collect()
}

/// A duration as an `--option` value, in the largest unit that says it exactly (`50ms`, `10s`), so the
/// child parses it the way the parent parsed the user's value.
fn arg_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        "0".into()
    } else if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// One child's command line (after the program name).
#[allow(clippy::too_many_arguments)]
pub(super) fn child_args(
    urls: &[String],
    kind: EngineKind,
    waiting: Option<Waiting>,
    workers: u64,
    keys: u64,
    budget: Option<u64>,
    w: &Workload,
    runtime: RuntimeKind,
    tag: &str,
) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "--worker-process".into(),
        "--tag".into(),
        tag.into(),
        "--quiet".into(),
        "--nodes".into(),
        urls.join(","),
        "--engine".into(),
        kind.name().into(),
        "--concurrency".into(),
        workers.to_string(),
        "--keys".into(),
        keys.to_string(),
        "--distribution".into(),
        w.distribution.to_string(),
        "--zipf-exponent".into(),
        w.zipf_exponent.to_string(),
        "--hold".into(),
        format!("{}..{}", arg_duration(w.hold.min), arg_duration(w.hold.max)),
        "--ttl".into(),
        arg_duration(w.ttl),
        "--retries".into(),
        w.retries.to_string(),
        "--retry-delay".into(),
        arg_duration(w.retry_delay),
        "--retry-jitter".into(),
        arg_duration(w.retry_jitter),
        "--warmup".into(),
        arg_duration(w.warmup),
        "--runtime".into(),
        runtime.name().into(),
        "--lock".into(),
        w.lock.to_string(),
    ];
    if let Some(waiting) = waiting {
        a.extend(["--waiting".into(), waiting.name().into()]);
    }
    match w.stop {
        Stop::Cycles(n) => a.extend(["--cycles".into(), budget.unwrap_or(n).to_string()]),
        Stop::Duration(d) => a.extend(["--duration".into(), arg_duration(d)]),
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::NodeSource;
    use crate::stats::Percentiles;

    #[test]
    fn shares() {
        assert_eq!(split(64, 4), [16, 16, 16, 16]);
        assert_eq!(split(10, 4), [3, 3, 2, 2]);
        assert_eq!(split(3, 1), [3]);
        assert_eq!(split(10, 4).iter().sum::<u64>(), 10);
    }

    #[test]
    fn durations_round_trip_exactly() {
        for d in [
            Duration::ZERO,
            Duration::from_millis(50),
            Duration::from_secs(10),
            Duration::from_micros(1_500),
            Duration::from_nanos(1_000_000_001),
        ] {
            assert_eq!(
                crate::units::parse_duration(&arg_duration(d))
                    .unwrap()
                    .as_micros(),
                d.as_micros(),
                "{d:?}"
            );
        }
    }

    #[test]
    fn result_round_trip_keeps_every_bucket() {
        let mut a = WorkerStats::default();
        for v in [1u64, 7, 100, 1_234, 98_765, 4_000_000, 59_000_000] {
            a.acquire.record_n(v, v % 7 + 1).unwrap();
            a.release.record(v / 3 + 1).unwrap();
            a.grants.push(crate::overtakes::Grant {
                key: v % 4,
                start_ns: v,
                grant_ns: v * 2,
            });
        }
        a.cycles = 42;
        a.acquire_calls = 50;
        a.attempts = 61;
        a.attempts_known = 42;
        a.failed_acquires.insert("Contended", 8);
        let out = RunOutput {
            stats: a.clone(),
            per_worker: vec![20, 22],
            per_process: Vec::new(),
            elapsed: Duration::from_millis(5_000),
            cpu: CpuUse {
                client: Duration::from_micros(1_234_567),
                server_s: Some(2.5),
                server_calls: Some(7),
            },
        };
        let json = serde_json::to_string(&ChildResult::pack(&out)).unwrap();
        let back: ChildResult = serde_json::from_str(&json).unwrap();
        assert_eq!(back.cpu(), out.cpu);
        let (s, per_worker, elapsed) = back.unpack().unwrap();
        assert_eq!(per_worker, [20, 22]);
        assert_eq!(elapsed, Duration::from_secs(5));
        assert_eq!(
            (s.cycles, s.acquire_calls, s.attempts, s.attempts_known),
            (42, 50, 61, 42)
        );
        assert_eq!(s.failed_acquires["Contended"], 8);
        assert_eq!(
            s.grants, a.grants,
            "every grant's instants, for the overtakes"
        );
        assert_eq!(s.acquire.len(), a.acquire.len());
        assert_eq!(Percentiles::of(&s.acquire), Percentiles::of(&a.acquire));
        assert_eq!(Percentiles::of(&s.release), Percentiles::of(&a.release));
        assert_eq!(s.acquire.min(), a.acquire.min());
        // Merging two children equals recording everything in one histogram.
        let mut merged = WorkerStats::default();
        merged.merge(&s);
        merged.merge(&s);
        let mut twice = a.acquire.clone();
        twice.add(&a.acquire).unwrap();
        assert_eq!(Percentiles::of(&merged.acquire), Percentiles::of(&twice));
    }

    #[test]
    fn child_arguments_parse_back_into_the_same_workload() {
        use clap::Parser as _;
        let parent = crate::cli::Options::try_parse_from([
            "loadgen",
            "--concurrency",
            "64",
            "--keys",
            "4",
            "--hold",
            "1ms..3ms",
            "--ttl",
            "2s",
            "--retry-delay",
            "5ms",
            "--retry-jitter",
            "7ms",
            "--retries",
            "20",
            "--warmup",
            "300ms",
            "--duration",
            "1500ms",
            "--distribution",
            "zipf",
            "--zipf-exponent",
            "1.25",
        ])
        .unwrap()
        .plan()
        .unwrap();
        let urls = vec![
            "redis://127.0.0.1:1".to_string(),
            "redis://127.0.0.1:2".into(),
        ];
        let args = child_args(
            &urls,
            EngineKind::Redlock,
            Some(Waiting::Plain),
            16,
            4,
            None,
            &parent.workload,
            RuntimeKind::Multi,
            "07",
        );
        let child =
            crate::cli::Options::try_parse_from(std::iter::once("loadgen".into()).chain(args))
                .unwrap()
                .plan()
                .unwrap();
        assert_eq!(child.child.as_deref(), Some("07"));
        assert!(child.quiet);
        assert_eq!(child.nodes, NodeSource::Existing(urls));
        assert_eq!(child.engines, [EngineKind::Redlock]);
        assert_eq!(child.waiting, [Waiting::Plain]);
        assert_eq!(child.runtime, RuntimeKind::Multi);
        assert_eq!(
            (child.scenarios[0].concurrency, child.scenarios[0].keys),
            (16, 4)
        );
        let (a, b) = (&parent.workload, &child.workload);
        assert_eq!(
            (
                a.hold,
                a.ttl,
                a.retries,
                a.retry_delay,
                a.retry_jitter,
                a.stop,
                a.warmup
            ),
            (
                b.hold,
                b.ttl,
                b.retries,
                b.retry_delay,
                b.retry_jitter,
                b.stop,
                b.warmup
            )
        );
        assert_eq!(
            (a.distribution, a.zipf_exponent),
            (b.distribution, b.zipf_exponent)
        );
    }
}
