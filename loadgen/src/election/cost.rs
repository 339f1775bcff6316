//! The cost of holding leadership: the servers' CPU per second (`INFO cpu` used_cpu_user +
//! used_cpu_sys, summed over the nodes: [`crate::overload::cpu`]) in three phases of the same run,
//! each `--cost-for` long and in this one process: idle nodes; N renewed locks (the held
//! scenario's run, [`crate::overload::held::redlock::Held`], with the election's TTL and renewal
//! interval); N elections, each won by a campaign of its own and renewed by the same watchdog
//! (coalesced: one extend call per node carries up to 32 leaderships). The figures are meant as
//! same-run ratios.

use std::sync::Arc;
use std::time::Duration;

use redlock_engine::{Leadership, Redlock, Transport};
use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::engines::cause;
use crate::engines::redlock::build;
use crate::engines::{EngineKind, RetrySpec, Waiting};
use crate::nodes::addr::NodeUrl;
use crate::overload::args::{Kind, Spec as HeldSpec};
use crate::overload::cpu::{process_cpu, server_counters_async, ServerCounters};
use crate::overload::held::hold::hold;
use crate::overload::held::redlock::Held;
use crate::overload::held::HeldRecord;
use crate::workload::Workload;

use super::args::Spec;

/// Campaigns (and resignations) in flight at once while taking the elections: the held scenario's
/// default bound for its acquires.
const IN_FLIGHT: usize = 256;

/// One phase's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// `idle`, `renewed locks`, `elections`.
    pub what: &'static str,
    /// Locks or elections held (0 when idle).
    pub held: usize,
    /// Held at the start of the measured phase.
    pub acquired: u64,
    /// Lost at any time up to its end (sampled each second).
    pub lost: u64,
    /// Measured time, seconds.
    pub seconds: f64,
    /// The servers' CPU over it, seconds, summed over the nodes.
    pub server_cpu_s: f64,
    /// `server_cpu_s` per second of the phase, ms.
    pub server_cpu_ms_per_s: f64,
    /// Above idle, per lock or election, ms per s (`None` for idle).
    pub per_held_ms_per_s: Option<f64>,
    /// Commands the servers ran over it (`INFO stats` total_commands_processed), per second.
    pub server_commands_per_s: f64,
    /// This process's CPU (the engine holding them) per second, ms.
    pub client_cpu_ms_per_s: f64,
    /// Failures by cause (`acquire:`, `campaign:`, `release:`, `resign:`).
    pub failures: std::collections::BTreeMap<String, u64>,
}

impl Phase {
    fn new(
        what: &'static str,
        held: usize,
        hold: Duration,
        servers: ServerCounters,
        client: Duration,
    ) -> Self {
        let s = hold.as_secs_f64();
        Self {
            what,
            held,
            acquired: held as u64,
            lost: 0,
            seconds: s,
            server_cpu_s: servers.cpu_s,
            server_cpu_ms_per_s: servers.cpu_s * 1e3 / s,
            per_held_ms_per_s: None,
            server_commands_per_s: servers.commands as f64 / s,
            client_cpu_ms_per_s: client.as_secs_f64() * 1e3 / s,
            failures: Default::default(),
        }
    }
}

/// The three phases.
#[derive(Debug, Clone, Serialize)]
pub struct Holding {
    /// Nothing held.
    pub idle: Phase,
    /// N renewed locks.
    pub locks: Phase,
    /// N elections.
    pub elections: Phase,
    /// (elections − idle) ÷ (locks − idle), server CPU.
    pub elections_vs_locks: Option<f64>,
}

/// Measures idle nodes, then `spec.elections` renewed locks, then as many elections.
pub async fn run(
    urls: &[String],
    nodes: &[NodeUrl],
    spec: &Spec,
    w: &Workload,
    tag: &str,
    quiet: bool,
) -> Result<Holding, String> {
    let say = |what: &str| {
        if !quiet {
            eprintln!("loadgen: election cost: {what} for {:?}", spec.cost_for);
        }
    };
    let retry = RetrySpec {
        retries: w.retries,
        delay: w.retry_delay,
        jitter: w.retry_jitter,
    };
    let engine = build(urls, Transport::Pipeline, retry, Waiting::Smart).await?;

    say("idle nodes");
    let before = server_counters_async(nodes.to_vec()).await?;
    let cpu = process_cpu();
    let mut timeline = Vec::new();
    let took = hold(spec.cost_for, &mut timeline, || 0).await;
    let client = process_cpu().saturating_sub(cpu);
    let servers = server_counters_async(nodes.to_vec()).await?.since(before);
    let mut idle = Phase::new("idle", 0, took, servers, client);
    idle.acquired = 0;

    say(&format!("{} renewed locks", spec.elections));
    let held = HeldSpec {
        kind: Kind::Held,
        bursts: Vec::new(),
        acquire_timeout: Duration::from_secs(120),
        held: vec![spec.elections],
        hold_for: spec.cost_for,
        held_ttl: spec.ttl,
        // What an election renews on: the default policy, every third of the TTL.
        renew_every: spec.ttl / 3,
        acquire_concurrency: IN_FLIGHT,
    };
    let record = Held {
        engine: engine.clone(),
        nodes,
        spec: &held,
        count: spec.elections,
        tag: format!("{tag}l"),
    }
    .run(HeldRecord::empty(
        EngineKind::Redlock,
        "redlock".into(),
        spec.elections,
        &held,
    ))
    .await?;
    let mut locks = Phase::new(
        "renewed locks",
        spec.elections,
        Duration::from_secs_f64(record.hold_s),
        ServerCounters {
            cpu_s: record.server_cpu_s.unwrap_or(0.0),
            commands: record.server_commands.unwrap_or(0),
            ..Default::default()
        },
        Duration::from_secs_f64(record.client_cpu_s.unwrap_or(0.0)),
    );
    locks.acquired = record.acquired.unwrap_or(0);
    locks.lost = record.lost.unwrap_or(0);
    locks.failures = record.failures;

    say(&format!("{} elections", spec.elections));
    let elections = hold_elections(&engine, nodes, spec, tag).await?;
    engine.shutdown().await;

    let above = |p: &mut Phase| {
        if p.held > 0 {
            p.per_held_ms_per_s =
                Some((p.server_cpu_ms_per_s - idle.server_cpu_ms_per_s) / p.held as f64);
        }
    };
    let (mut locks, mut elections) = (locks, elections);
    above(&mut locks);
    above(&mut elections);
    let lock_cost = locks.server_cpu_ms_per_s - idle.server_cpu_ms_per_s;
    let election_cost = elections.server_cpu_ms_per_s - idle.server_cpu_ms_per_s;
    Ok(Holding {
        elections_vs_locks: (lock_cost > 0.0).then(|| election_cost / lock_cost),
        idle,
        locks,
        elections,
    })
}

/// Campaigns for `spec.elections` elections at once (at most [`IN_FLIGHT`] in flight), holds them
/// for `spec.cost_for` with the servers' CPU read around it, then resigns them.
async fn hold_elections(
    engine: &Redlock,
    nodes: &[NodeUrl],
    spec: &Spec,
    tag: &str,
) -> Result<Phase, String> {
    let gate = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut tasks = JoinSet::new();
    for i in 0..spec.elections {
        let (engine, gate, ttl) = (engine.clone(), gate.clone(), spec.ttl);
        let name = format!("lg{tag}e:{i}");
        tasks.spawn(async move {
            let _permit = gate.acquire_owned().await;
            let election = engine.election(name).ttl(ttl);
            election.campaign(format!("holder-{i}")).once().await
        });
    }
    let mut won: Vec<Leadership> = Vec::with_capacity(spec.elections);
    let mut failures = std::collections::BTreeMap::new();
    while let Some(joined) = tasks.join_next().await {
        match joined.map_err(|e| format!("a campaign task failed: {e}"))? {
            Ok(l) => won.push(l),
            Err(e) => {
                *failures
                    .entry(format!("campaign:{}", cause::of(&e)))
                    .or_default() += 1
            }
        }
    }
    let mut ever_lost = vec![false; won.len()];
    let sample = |won: &[Leadership], ever: &mut [bool]| -> u64 {
        for (seen, l) in ever.iter_mut().zip(won) {
            *seen |= l.is_lost();
        }
        ever.iter().filter(|&&l| l).count() as u64
    };
    let before = server_counters_async(nodes.to_vec()).await?;
    let cpu = process_cpu();
    let mut timeline = Vec::new();
    let took = hold(spec.cost_for, &mut timeline, || {
        sample(&won, &mut ever_lost)
    })
    .await;
    let client = process_cpu().saturating_sub(cpu);
    let servers = server_counters_async(nodes.to_vec()).await?.since(before);
    let mut phase = Phase::new("elections", spec.elections, took, servers, client);
    phase.acquired = won.len() as u64;
    phase.lost = sample(&won, &mut ever_lost);

    let mut tasks = JoinSet::new();
    for l in won {
        let gate = gate.clone();
        tasks.spawn(async move {
            let _permit = gate.acquire_owned().await;
            l.resign().await
        });
    }
    while let Some(joined) = tasks.join_next().await {
        if let Err(e) = joined.map_err(|e| format!("a resign task failed: {e}"))? {
            *failures
                .entry(format!("resign:{}", cause::of(&e)))
                .or_default() += 1;
        }
    }
    phase.failures = failures;
    Ok(phase)
}
