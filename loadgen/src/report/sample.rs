//! [`sample`]: a small report with made-up numbers, for the renderers' tests.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::cli::RuntimeKind;
use crate::engines::ceiling::{Ceiling, NativeCeiling};
use crate::engines::{EngineKind, Waiting};
use crate::machine::{Machine, Versions};
use crate::nodes::probe::ServerInfo;
use crate::overload::cpu::CpuUse;
use crate::overtakes::Overtakes;
use crate::units::Hold;
use crate::workload::{Distribution, Scenario, Stop, Workload};

use super::record::{Report, RunRecord, Testbed};

/// A small report with made-up numbers, for the renderers' tests.
pub(crate) fn sample() -> Report {
    let workload = Workload {
        distribution: Distribution::Uniform,
        zipf_exponent: 1.0,
        hold: Hold::default(),
        ttl: Duration::from_secs(10),
        retries: 10,
        retry_delay: Duration::from_millis(50),
        retry_jitter: Duration::from_millis(50),
        stop: Stop::Duration(Duration::from_secs(5)),
        warmup: Duration::from_secs(1),
        lock: Default::default(),
    };
    let scenarios = Scenario::standard();
    let mut runs = Vec::new();
    for s in &scenarios {
        for (engine, base) in [
            (EngineKind::Redlock, 100),
            (EngineKind::Rslock, 300),
            (EngineKind::Raw, 90),
        ] {
            let mut acquire = crate::stats::histogram();
            for i in 0..1000 {
                acquire.record(base + i % 50).unwrap();
            }
            runs.push(RunRecord {
                engine,
                scenario: s.clone(),
                nodes: 5,
                cycles: 1000,
                elapsed: Duration::from_secs(1),
                cycles_per_s: 1e6 / base as f64,
                release: Some(acquire.clone()),
                acquire: Some(acquire),
                attempts_per_acquire: Some(1.0),
                failed_acquires: BTreeMap::from([("Contended".to_string(), 2)]),
                failed_releases: BTreeMap::new(),
                fairness: Some(0.99),
                ceiling: None,
                waiting: engine.has_waiting().then_some(Waiting::Smart),
                processes: Some(1),
                per_process: Vec::new(),
                overtakes: Some(Overtakes {
                    max: 3,
                    per_grant: 0.25,
                    grants: 1000,
                }),
                cpu: Some(CpuUse {
                    client: Duration::from_millis(base),
                    server_s: Some(0.5),
                    server_calls: Some(5_000),
                }),
            });
        }
        runs.push(RunRecord {
            engine: EngineKind::Ceiling,
            scenario: s.clone(),
            nodes: 5,
            cycles: 0,
            elapsed: Duration::from_secs(2),
            cycles_per_s: 20_000.0,
            acquire: None,
            release: None,
            attempts_per_acquire: None,
            failed_acquires: BTreeMap::new(),
            failed_releases: BTreeMap::new(),
            fairness: None,
            overtakes: None,
            ceiling: Some(Ceiling {
                cycles_per_s: 20_000.0,
                set_ops_per_s: 120_000.0,
                release_ops_per_s: 120_000.0,
                clients: s.concurrency,
                elapsed: Duration::from_secs(2),
                native: Some(NativeCeiling {
                    cycles_per_s: 25_000.0,
                    delifeq_ops_per_s: 200_000.0,
                }),
            }),
            waiting: None,
            processes: None,
            per_process: Vec::new(),
            cpu: None,
        });
    }
    Report {
        testbed: Testbed {
            command: "loadgen".into(),
            machine: Machine::detect(),
            versions: Versions::with_redis("7.0.15".into()),
            servers: (0..5)
                .map(|i| ServerInfo {
                    node: format!("redis://127.0.0.1:{}", 7000 + i),
                    name: "redis".into(),
                    version: "7.0.15".into(),
                    redis_version: "7.0.15".into(),
                })
                .collect(),
            node_source: "spawned",
            nodes: 5,
        },
        workload,
        runtime: RuntimeKind::Current,
        engines: vec![
            EngineKind::Redlock,
            EngineKind::Rslock,
            EngineKind::Raw,
            EngineKind::Ceiling,
        ],
        scenarios,
        runs,
        processes: 1,
        waiting: vec![Waiting::Smart],
        notes: vec!["a note".into()],
        overload: Default::default(),
        contention: Vec::new(),
    }
}
