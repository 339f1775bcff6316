//! The whole invocation: options → nodes → runtime → every scenario × engine ([`crate::session`]) →
//! outputs, with one clean error line and no leftover redis-server on every way out (error, Ctrl-C,
//! SIGTERM, panic).

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::cli::{one_line, NodeSource, Options, Plan, RuntimeKind, Server};
use crate::engines::ceiling;
use crate::engines::EngineKind;
use crate::nodes::addr::NodeUrl;
use crate::nodes::spawn::SpawnedNodes;
use crate::session::execute;

/// A failure: the message (one line) and the exit code.
type Failure = (String, u8);

fn failure(code: u8) -> impl Fn(String) -> Failure {
    move |msg| (msg, code)
}

/// Parses the command line, runs, prints; the process exit code.
pub fn main() -> ExitCode {
    let opts = match Options::try_parse() {
        Ok(opts) => opts,
        // `--help` and `--version`: clap's only messages for stdout, and not failures.
        Err(e) if !e.use_stderr() => {
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

/// One candidate or observer process of an election run (see [`crate::election::child`]).
fn run_election_child(plan: &Plan, spec: &crate::election::args::Spec) -> Result<(), Failure> {
    let (NodeSource::Existing(urls), Some((role, name))) = (&plan.nodes, &spec.child) else {
        return Err(("--election-child takes --nodes".into(), 2));
    };
    let runtime = runtime(plan.runtime)?;
    let result = runtime.block_on(crate::election::child::child(
        urls,
        &plan.workload,
        spec.ttl,
        *role,
        name,
    ));
    runtime.shutdown_timeout(Duration::from_secs(1));
    result.map_err(failure(1))
}

/// Runs the election scenario on `urls`: its own table and JSON document.
fn run_election(
    plan: &Plan,
    spec: &crate::election::args::Spec,
    urls: &[String],
) -> Result<(), Failure> {
    let (nodes, servers) = crate::nodes::preflight(urls).map_err(failure(1))?;
    let runtime = runtime(plan.runtime)?;
    let result = runtime.block_on(async {
        tokio::select! {
            r = crate::election::run(plan, spec, urls, &nodes, servers) => r.map_err(failure(1)),
            why = interrupted() => Err((why, 130)),
        }
    });
    runtime.shutdown_timeout(Duration::from_secs(2));
    let record = result?;
    if !plan.quiet {
        print!("{}", crate::election::report::render(&record));
    }
    if let Some(path) = &plan.json {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| (format!("cannot create {}: {e}", parent.display()), 1))?;
        }
        std::fs::write(path, crate::election::report::json(&record))
            .map_err(|e| (format!("cannot write {}: {e}", path.display()), 1))?;
    }
    Ok(())
}

/// Runs a validated plan.
pub fn run(plan: Plan) -> Result<(), Failure> {
    if plan.child.is_some() {
        return run_child(&plan);
    }
    if let Some(spec) = plan.election.as_ref().filter(|s| s.child.is_some()) {
        return run_election_child(&plan, spec);
    }
    // Spawned here, on the main thread, before any runtime exists (see `SpawnedNodes::start`).
    let spawned = match &plan.nodes {
        NodeSource::Spawn(n) => {
            // A server that cannot be had is the caller's to fix, like a bad option: exit code 2.
            let server = crate::nodes::server::binary(&plan.server).map_err(failure(2))?;
            let nodes = SpawnedNodes::start(*n, plan.persistence, &server).map_err(failure(1))?;
            if !plan.quiet {
                let ports: Vec<String> = nodes
                    .urls()
                    .iter()
                    .filter_map(|u| u.rsplit(':').next().map(String::from))
                    .collect();
                let of = match plan.server {
                    Server::Redis7 => String::new(),
                    _ => format!(" ({})", server.display()),
                };
                eprintln!(
                    "loadgen: started {n} redis-server nodes{of} on 127.0.0.1, ports {}",
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
    if let Some(spec) = &plan.election {
        let result = run_election(&plan, spec, &urls);
        drop(spawned); // stop the nodes (the run's processes are gone by now)
        return result;
    }
    let (nodes, servers) = crate::nodes::preflight(&urls).map_err(failure(1))?;
    let mut engines = plan.engines.clone();
    let mut notes = Vec::new();
    // The contention scenario compares lock clients only: no ceiling by default.
    if plan.default_engines && !plan.contention {
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
            report = execute(&plan, &urls, &nodes, servers, engines, notes) => report.map_err(failure(1)),
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
    notes.push("nodes: a Redis Cluster node set runs on the engine's own connections (one per shard master) under redlock and on fred's cluster client under redlock-fred; a Sentinel node is reached through fred under both; loadgen watches every cluster member the URL lists and the master the Sentinels name".into());
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
