//! The whole invocation: options → nodes → runtime → every scenario × engine → outputs, with one clean
//! error line and no leftover redis-server on every way out (error, Ctrl-C, SIGTERM, panic).

use std::process::ExitCode;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::Parser;

use crate::cli::{one_line, NodeSource, Options, Plan, RuntimeKind};
use crate::engines::ceiling::{self, Ceiling};
use crate::engines::rslock::RslockClient;
use crate::engines::{EngineKind, RetrySpec, Waiting};
use crate::machine::{Machine, Versions};
use crate::nodes::addr::NodeUrl;
use crate::nodes::health::Health;
use crate::nodes::spawn::SpawnedNodes;
use crate::report::{group, micros, Report, RunRecord};
use crate::run::{label, run_engine, RunContext};
use crate::stats::jain;
use crate::workload::{Scenario, Stop};

/// A failure: the message (one line) and the exit code.
type Failure = (String, u8);

fn failure(code: u8) -> impl Fn(String) -> Failure {
    move |msg| (msg, code)
}

/// Parses the command line, runs, prints; the process exit code.
pub fn main() -> ExitCode {
    let opts = match Options::try_parse() {
        Ok(opts) => opts,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => return fail(&(one_line(&e), 2)),
    };
    match opts.plan().map_err(failure(2)).and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => fail(&f),
    }
}

fn fail((msg, code): &Failure) -> ExitCode {
    let msg = msg.trim_start_matches("error: ").replace('\n', " ");
    eprintln!("loadgen: error: {msg}");
    ExitCode::from(*code)
}

fn runtime(kind: RuntimeKind) -> Result<tokio::runtime::Runtime, Failure> {
    match kind {
        RuntimeKind::Current => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        RuntimeKind::Multi => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    }
    .map_err(|e| (format!("cannot start the tokio runtime: {e}"), 1))
}

/// One worker process of a `--processes` run (see [`crate::procs`]).
fn run_child(plan: &Plan) -> Result<(), Failure> {
    let runtime = runtime(plan.runtime)?;
    let result = runtime.block_on(crate::procs::child(plan));
    runtime.shutdown_timeout(Duration::from_secs(1));
    result.map_err(failure(1))
}

/// Runs a validated plan.
pub fn run(plan: Plan) -> Result<(), Failure> {
    if plan.child.is_some() {
        return run_child(&plan);
    }
    // Spawned here, on the main thread, before any runtime exists (see `SpawnedNodes::start`).
    let spawned = match &plan.nodes {
        NodeSource::Spawn(n) => {
            let nodes = SpawnedNodes::start(*n).map_err(failure(1))?;
            if !plan.quiet {
                let ports: Vec<String> = nodes
                    .urls()
                    .iter()
                    .filter_map(|u| u.rsplit(':').next().map(String::from))
                    .collect();
                eprintln!(
                    "loadgen: started {n} redis-server nodes on 127.0.0.1, ports {}",
                    ports.join(",")
                );
            }
            Some(nodes)
        }
        NodeSource::Existing(_) => None,
    };
    let urls = match (&plan.nodes, &spawned) {
        (NodeSource::Existing(urls), _) => urls.clone(),
        (_, Some(s)) => s.urls(),
        (_, None) => unreachable!("spawned nodes exist when the plan spawns"),
    };
    let (nodes, redis_version) = crate::nodes::preflight(&urls).map_err(failure(1))?;
    let mut engines = plan.engines.clone();
    let mut notes = Vec::new();
    if plan.default_engines {
        if ceiling::available() {
            engines.push(EngineKind::Ceiling);
        } else {
            notes.push("ceiling skipped: redis-benchmark is not installed (apt-get install -y redis-tools)".into());
        }
    } else if engines.contains(&EngineKind::Ceiling) && !ceiling::available() {
        return Err(("engine ceiling needs redis-benchmark: install it with `apt-get install -y redis-tools`".into(), 1));
    }
    notes.extend(node_set_fits(&nodes, &mut engines, plan.default_engines)?);

    let runtime = runtime(plan.runtime)?;
    let result = runtime.block_on(async {
        tokio::select! {
            report = execute(&plan, &urls, &nodes, redis_version, engines, notes) => report.map_err(failure(1)),
            why = interrupted() => Err((why, 130)),
        }
    });
    runtime.shutdown_timeout(Duration::from_secs(2));
    drop(spawned); // stop the nodes before anything else can go wrong
    let report = result?;

    if !plan.quiet {
        print!("{}", crate::report::table::render(&report));
    }
    if let Some(path) = &plan.json {
        report.write_json(path).map_err(failure(1))?;
    }
    if let Some(dir) = &plan.out {
        report.write_dir(dir).map_err(failure(1))?;
    }
    Ok(())
}

/// Checks that every engine can use the node set: rslock, raw and the ceiling need standalone masters.
/// Named on the command line, such an engine is an error; in the default set it is skipped with a note.
/// Returns the notes the report gets about a Cluster or Sentinel node set.
fn node_set_fits(
    nodes: &[NodeUrl],
    engines: &mut Vec<EngineKind>,
    default_engines: bool,
) -> Result<Vec<String>, Failure> {
    let Some(set) = nodes.iter().find(|n| !n.is_standalone()) else {
        return Ok(Vec::new());
    };
    let mut notes = Vec::new();
    let cannot: Vec<&str> = engines
        .iter()
        .filter(|e| e.standalone_only())
        .map(|e| e.name())
        .collect();
    if !cannot.is_empty() {
        let why = format!(
            "{} can use standalone masters only, and node {} is {}",
            cannot.join(", "),
            set.url,
            set.kind()
        );
        if !default_engines {
            return Err((format!("{why}: use --engine redlock,redlock-fred"), 1));
        }
        engines.retain(|e| !e.standalone_only());
        notes.push(format!("{why}: skipped"));
    }
    notes.push("nodes: a Redis Cluster or Sentinel node is reached through fred whatever the transport (the engine's own pipeline speaks to one server), so on these nodes redlock and redlock-fred run the same client; loadgen watches every cluster member the URL lists and the master the Sentinels name".into());
    Ok(notes)
}

/// Resolves on Ctrl-C or SIGTERM with what happened.
async fn interrupted() -> String {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return "interrupted".into();
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "interrupted (Ctrl-C)".into(),
        _ = term.recv() => "terminated (SIGTERM)".into(),
    }
}

async fn execute(
    plan: &Plan,
    urls: &[String],
    nodes: &[NodeUrl],
    redis_version: String,
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
                let modes: Vec<Option<Waiting>> = if engine.has_waiting() {
                    plan.waiting.iter().copied().map(Some).collect()
                } else {
                    vec![None]
                };
                for waiting in modes {
                    run_no += 1;
                    let tag = format!("{run_no:02}");
                    let processes = plan.processes.min(scenario.concurrency).max(1);
                    let out = if processes > 1 {
                        crate::procs::run_processes(
                            engine,
                            waiting,
                            &ctx,
                            plan.runtime,
                            scenario,
                            &tag,
                            processes,
                            &label(engine, waiting),
                        )
                        .await
                        .map_err(|e| format!("{}: {e}", label(engine, waiting)))?
                    } else {
                        run_engine(engine, waiting, &ctx, scenario, &tag).await?
                    };
                    let record = RunRecord {
                        engine,
                        waiting,
                        processes: Some(processes),
                        scenario: scenario.clone(),
                        nodes: nodes.len(),
                        cycles: out.stats.cycles,
                        elapsed: out.elapsed,
                        cycles_per_s: out.stats.cycles as f64 / out.elapsed.as_secs_f64().max(1e-9),
                        attempts_per_acquire: out.stats.attempts_per_acquire(),
                        failed_acquires: out
                            .stats
                            .failed_acquires
                            .iter()
                            .map(|(k, v)| (k.to_string(), *v))
                            .collect(),
                        failed_releases: out
                            .stats
                            .failed_releases
                            .iter()
                            .map(|(k, v)| (k.to_string(), *v))
                            .collect(),
                        fairness: jain(&out.per_worker),
                        per_process: out.per_process,
                        acquire: Some(out.stats.acquire),
                        release: Some(out.stats.release),
                        ceiling: None,
                    };
                    if !plan.quiet {
                        eprintln!("{}", status_line(&record));
                    }
                    runs.push(record);
                }
            }
        }
    }
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
    if let Some(spec) = &plan.overload {
        notes.extend(crate::overload::notes(spec, &plan.workload));
    }
    Ok(Report {
        overload,
        command: command_line(),
        machine: Machine {
            loadavg_start,
            ..Machine::detect()
        },
        versions: Versions::with_redis(redis_version),
        node_source: match plan.nodes {
            NodeSource::Spawn(_) => "spawned",
            NodeSource::Existing(_) => "existing",
        },
        nodes: nodes.len(),
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
    let limit = round * 4 + Duration::from_secs(30);
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
        ceiling: Some(c),
        waiting: None,
        processes: None,
        per_process: Vec::new(),
    }
}

fn status_line(r: &RunRecord) -> String {
    let lat = r.acquire_pct().map_or_else(String::new, |p| {
        format!("  acquire p50 {} p99 {}", micros(p.p50), micros(p.p99))
    });
    let mut fair = r
        .fairness
        .map_or_else(String::new, |f| format!("  fairness {f:.3}"));
    if let Some(f) = r.process_fairness() {
        fair.push_str(&format!(" (processes {f:.3})"));
    }
    let procs = match r.processes {
        Some(p) if p > 1 => format!(" x{p} proc"),
        _ => String::new(),
    };
    format!(
        "loadgen: {:<16} {:<34} {:>10} cycles/s{lat}{fair}",
        r.label(),
        format!("{}{procs}", r.scenario.label),
        group(r.cycles_per_s)
    )
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
    notes.push("attempts/acquire: for redlock, Lock::attempts of each successful acquire (attempts on the nodes; 0 for a lock handed over locally, so the mean can be below 1; failed acquires do not report it); rslock's retry loop is replayed in loadgen to count them (same pause distribution and timer)".into());
    if engines.iter().any(|e| e.has_waiting()) {
        let modes: Vec<&str> = plan.waiting.iter().map(|w| w.name()).collect();
        notes.push(format!(
            "waiting ({}): smart = the engine's defaults (in-process FIFO queue per resource, release notifications to waiters in other processes, up to 4 local hand-offs in a row); plain = randomized retry backoff only (local_queue, notify_releases off, max_local_handoffs 0), shown as redlock[plain]",
            modes.join(",")
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

fn command_line() -> String {
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
