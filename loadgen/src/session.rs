//! One invocation's measurements, on the runtime [`crate::app`] started: every scenario × engine (×
//! waiting mode) in run order (each measured by [`crate::measure`]), the ceiling measured once, the
//! contention scenario's rows or overload's runs after them, each run's status line, and the
//! [`Report`] with the notes on how the numbers were made.

use std::time::Duration;

use crate::cli::{NodeSource, Plan, RuntimeKind};
use crate::engines::ceiling::{self, Ceiling};
use crate::engines::rslock::RslockClient;
use crate::engines::{EngineKind, RetrySpec};
use crate::machine::{Machine, Versions};
use crate::measure::{measure, status_line, RunSpec};
use crate::nodes::addr::NodeUrl;
use crate::nodes::health::Health;
use crate::nodes::probe::ServerInfo;
use crate::report::{Report, RunRecord, Testbed};
use crate::run::RunContext;
use crate::workload::{Scenario, Stop};

/// Runs every scenario of `plan` on every engine, then the overload part; the report (not yet written).
pub async fn execute(
    plan: &Plan,
    urls: &[String],
    nodes: &[NodeUrl],
    servers: Vec<ServerInfo>,
    engines: Vec<EngineKind>,
    mut notes: Vec<String>,
) -> Result<Report, String> {
    let health = Health::start(nodes)?;
    let loadavg_start = crate::machine::loadavg();
    let ctx = RunContext {
        urls,
        health: &health,
        workload: &plan.workload,
        quiet: plan.quiet,
    };
    let mut runs = Vec::new();
    // The ceiling does not depend on the scenario: measure it once, show it in each.
    let mut ceiling: Option<Ceiling> = None;
    let mut run_no = 0;
    for scenario in &plan.scenarios {
        for &engine in &engines {
            if engine == EngineKind::Ceiling {
                let c = match &ceiling {
                    Some(c) => c.clone(),
                    None => ceiling
                        .insert(measure_ceiling(plan, nodes, &health).await?)
                        .clone(),
                };
                let record = ceiling_record(scenario, nodes.len(), c);
                if !plan.quiet {
                    eprintln!("{}", status_line(&record));
                }
                runs.push(record);
            } else {
                for waiting in engine.waiting_modes(&plan.waiting) {
                    run_no += 1;
                    let tag = format!("{run_no:02}");
                    let spec = RunSpec {
                        engine,
                        waiting,
                        scenario,
                        tag: &tag,
                        processes: plan.processes.min(scenario.concurrency).max(1),
                        runtime: plan.runtime,
                        nodes: nodes.len(),
                    };
                    let record = measure(spec, &ctx).await?;
                    if !plan.quiet {
                        eprintln!("{}", status_line(&record));
                    }
                    runs.push(record);
                }
            }
        }
    }
    // The contention scenario's rows (layouts x locks x engines), after any ordinary scenario.
    let contention = if plan.contention {
        crate::contention::run(plan, &ctx, nodes.len(), &engines).await?
    } else {
        Vec::new()
    };
    let overload = match &plan.overload {
        Some(spec) => {
            let b = |label: &str| {
                runs.iter()
                    .find(|r| r.scenario.id == "b" && r.label() == label)
                    .map(|r| r.cycles_per_s)
            };
            crate::overload::run(spec, &ctx, nodes, &engines, &plan.waiting, b).await?
        }
        None => Default::default(),
    };
    notes.extend(standard_notes(plan, &engines));
    if plan.contention {
        notes.extend(crate::contention::notes(&plan.workload));
    }
    match ceiling.map(|c| c.native.is_some()) {
        Some(true) => notes.push("ceiling[native]: every node accepts DELIFEQ, so the ceiling was measured with it as the release too (after a SET NX PX round that puts the keys back, not counted): native_cycles_per_s = 1/(1/acquire_rate + 1/delifeq_rate), with the same SET rate as cycles/s, so the two differ by the release command alone; redlock/ceiling[native] is redlock's cycles/s over it".into()),
        Some(false) => notes.push("ceiling[native]: not measured, not every node accepts DELIFEQ (Valkey 9 has it)".into()),
        None => {}
    }
    if let Some(spec) = &plan.overload {
        notes.extend(crate::overload::notes(spec, &plan.workload));
    }
    Ok(Report {
        overload,
        contention,
        testbed: testbed(plan, servers, nodes.len(), loadavg_start),
        workload: plan.workload.clone(),
        runtime: plan.runtime,
        engines,
        scenarios: plan.scenarios.clone(),
        runs,
        processes: plan.processes,
        waiting: plan.waiting.clone(),
        notes,
    })
}

/// Where this invocation ran: its command line, the machine (`loadavg_start` read before the first
/// run), the versions, `servers` and the node count.
pub fn testbed(
    plan: &Plan,
    servers: Vec<ServerInfo>,
    nodes: usize,
    loadavg_start: Option<f64>,
) -> Testbed {
    Testbed {
        command: command_line(),
        machine: Machine {
            loadavg_start,
            ..Machine::detect()
        },
        versions: Versions::with_redis(
            servers
                .first()
                .map_or_else(|| "unknown".into(), |s| s.redis_version.clone()),
        ),
        servers,
        node_source: match plan.nodes {
            NodeSource::Spawn(_) => plan.persistence.node_source(),
            NodeSource::Existing(_) => "existing",
        },
        nodes,
    }
}

async fn measure_ceiling(
    plan: &Plan,
    nodes: &[NodeUrl],
    health: &Health,
) -> Result<Ceiling, String> {
    let round = match plan.workload.stop {
        Stop::Duration(d) => (d / 2).clamp(Duration::from_millis(200), Duration::from_secs(10)),
        Stop::Cycles(_) => Duration::from_secs(2),
    };
    if !plan.quiet {
        eprintln!(
            "loadgen: ceiling: redis-benchmark -c {} -P {} on every node at once",
            ceiling::CLIENTS,
            ceiling::PIPELINE
        );
    }
    // Calibration, then up to four measured rounds (SET, script; with DELIFEQ: SET again, DELIFEQ).
    let limit = round * 6 + Duration::from_secs(30);
    tokio::select! {
        c = tokio::time::timeout(limit, ceiling::measure(nodes, plan.workload.ttl, round)) => {
            c.map_err(|_| format!("ceiling: redis-benchmark did not finish within {limit:?}"))?
        }
        why = health.lost() => Err(why),
    }
}

fn ceiling_record(scenario: &Scenario, nodes: usize, c: Ceiling) -> RunRecord {
    RunRecord {
        engine: EngineKind::Ceiling,
        scenario: scenario.clone(),
        nodes,
        cycles: 0,
        elapsed: c.elapsed,
        cycles_per_s: c.cycles_per_s,
        acquire: None,
        release: None,
        attempts_per_acquire: None,
        failed_acquires: Default::default(),
        failed_releases: Default::default(),
        fairness: None,
        overtakes: None,
        ceiling: Some(c),
        waiting: None,
        processes: None,
        per_process: Vec::new(),
        cpu: None,
    }
}

fn standard_notes(plan: &Plan, engines: &[EngineKind]) -> Vec<String> {
    let w = &plan.workload;
    let retry = RetrySpec {
        retries: w.retries,
        delay: w.retry_delay,
        jitter: w.retry_jitter,
    };
    let mut notes = vec![match plan.runtime {
        RuntimeKind::Current => "runtime: tokio current-thread (the default: measured faster than multi-thread for this workload on a 2-core machine, see results/README.md)".to_string(),
        RuntimeKind::Multi => "runtime: tokio multi-thread, one worker thread per core".to_string(),
    }];
    notes.push(
        "keys: all workers share the key space; 'distinct keys' means 1m keys picked uniformly, so collisions are rare but possible (they show as attempts/acquire above 1)"
            .into(),
    );
    notes.push("overtakes: per grant, the waiters of the same key whose acquire call started after this one's and that were granted before it (CLOCK_MONOTONIC, shared by every process of a --processes run); max over all grants and mean per grant. The fair lock orders by enqueue completion (one round trip after the call starts, two when the nodes' tickets disagree), so calls started that close together may be granted in either order: a few overtakes are allowed by its property, a max that grows with the waiters is not; failed acquires are not counted".into());
    notes.push("attempts/acquire: for redlock, Lock::attempts of each successful acquire (attempts on the nodes; 0 for a lock handed over locally, so the mean can be below 1; failed acquires do not report it); rslock's retry loop is replayed in loadgen to count them (same pause distribution and timer)".into());
    if engines.iter().any(|e| e.has_waiting()) {
        let modes: Vec<&str> = plan.waiting.iter().map(|w| w.name()).collect();
        notes.push(format!(
            "waiting ({}): smart = the engine's defaults (in-process FIFO queue per resource, release notifications to waiters in other processes, up to {} local hand-offs in a row); plain = randomized retry backoff only (local_queue, notify_releases off, max_local_handoffs 0), shown as redlock[plain]",
            modes.join(","),
            redlock_engine::Config::default().max_local_handoffs
        ));
    }
    if plan.processes > 1 {
        notes.push(format!(
            "processes: each run's workers were split among {} loadgen processes on the same nodes (a scenario with fewer workers used that many), started together after a start barrier; histograms and per-worker counts merged, fairness over every worker of every process, cycles/s over the longest process's measured time",
            plan.processes
        ));
    }
    if engines.contains(&EngineKind::Rslock) {
        notes.push(format!(
            "{}; ours: {} retries, pause {:?} + uniform [0, {:?}]",
            RslockClient::describe(retry),
            w.retries,
            w.retry_delay,
            w.retry_jitter
        ));
        notes.push("rslock has no per-node reply deadline and releases with an unchecked result (its unlock returns nothing)".into());
    }
    if engines.contains(&EngineKind::Raw) {
        notes.push("raw: SET NX PX on every node then the release script on every node, over redlock's pipeline, waiting for every reply; no early quorum decision, no validity check".into());
    }
    if engines.contains(&EngineKind::Ceiling) {
        notes.push(format!(
            "ceiling: measured once, redis-benchmark on every node at once, -c {} -P {} ({} requests in flight per node) over 100k random keys: SET NX PX, then EVALSHA of the release script; cycles/s = 1/(1/acquire_rate + 1/release_rate), rate = summed ops/s / N; no latency (pipelined batches). More clients lower it here: with -c 64 the 5 redis-benchmark processes take the 2 cores from the servers",
            ceiling::CLIENTS,
            ceiling::PIPELINE,
            ceiling::CLIENTS * ceiling::PIPELINE
        ));
    }
    notes
}

/// The command line as the reports quote it (`loadgen --scenario …`).
pub fn command_line() -> String {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .map(|a| {
            if a.contains(' ') || a.is_empty() {
                format!("'{a}'")
            } else {
                a
            }
        })
        .collect();
    if args.is_empty() {
        "loadgen".into()
    } else {
        format!("loadgen {}", args.join(" "))
    }
}
