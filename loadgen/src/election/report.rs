//! What an election run measured ([`ElectionRecord`]) and how it is written: the text table on
//! stdout ([`render`]) and the `--json` document ([`json`], its schema the structs here: `machine`,
//! `versions`, `servers`, `config` as every loadgen document has them, then `rtt_us`, `failover`,
//! `goals`, `holding`, `notes`).

use serde::Serialize;

use crate::machine::{Machine, Versions};
use crate::nodes::probe::ServerInfo;
use crate::report::json::{servers_out, ServerOut};
use crate::report::Testbed;
use crate::stats::Percentiles;

use super::cost::{Holding, Phase};
use super::failover::{Failover, CANDIDATES};

/// The observers' goal: informed within this long of the new term's commit, at p99.
pub const OBSERVER_GOAL_MS: f64 = 50.0;

/// One election run.
#[derive(Debug, Clone)]
pub struct ElectionRecord {
    /// The command line, machine, versions, servers and nodes.
    pub testbed: Testbed,
    /// The failover trials' election (its candidates' and observers' `--election-name`).
    pub name: String,
    /// The election TTL, ms.
    pub ttl_ms: u64,
    /// Observer processes.
    pub observers: usize,
    /// Elections (and renewed locks) held for the cost.
    pub elections: usize,
    /// Each cost phase, seconds.
    pub cost_for_s: f64,
    /// `PING` round trips, µs.
    pub rtt_us: Percentiles,
    /// The trials.
    pub failover: Failover,
    /// The holding cost.
    pub holding: Holding,
}

/// A goal and the run's figure.
#[derive(Debug, Clone, Serialize)]
pub struct GoalOut {
    /// What is compared.
    pub what: &'static str,
    /// The measured value, ms.
    pub measured_ms: f64,
    /// The goal, ms (at most).
    pub goal_ms: f64,
    /// Whether it was met in this run.
    pub met: bool,
}

impl ElectionRecord {
    /// The goal of a failover: TTL + 2 node round trips (this run's median `PING`).
    pub fn failover_goal_ms(&self) -> f64 {
        self.ttl_ms as f64 + 2.0 * self.rtt_us.p50 / 1e3
    }

    /// The two goals with this run's p99s.
    pub fn goals(&self) -> Vec<GoalOut> {
        let failover = self.failover.failover_us.p99 / 1e3;
        let observers = self.failover.observer_delay_us.p99 / 1e3;
        let goal = self.failover_goal_ms();
        vec![
            GoalOut {
                what: "failover p99 <= TTL + 2 RTT",
                measured_ms: failover,
                goal_ms: goal,
                met: failover <= goal,
            },
            GoalOut {
                what: "observer delay p99 <= 50 ms",
                measured_ms: observers,
                goal_ms: OBSERVER_GOAL_MS,
                met: observers <= OBSERVER_GOAL_MS && self.failover.observer_missed == 0,
            },
        ]
    }

    /// How the numbers were made, one line each.
    pub fn notes(&self) -> Vec<String> {
        vec![
            format!("failover: {CANDIDATES} candidate processes and {} observer processes on one election (TTL {} ms, renewed every third of it); each trial lets the leader lead 0.5-1.5 TTL, kill -9s its process and times the kill to another candidate's campaign returning (CLOCK_MONOTONIC, shared by the processes), then starts a replacement candidate", self.observers, self.ttl_ms),
            "why failover is about the TTL: a killed leader does not resign, so its key stays on the nodes until its TTL runs out from its last renewal (2/3 to 1 TTL after the kill, renewing every third of it); a waiting candidate's lost attempt is told the key's time left and retries as it runs out, and the winner then publishes its leader record on a majority before its campaign returns".into(),
            "observer delay: from the new leader's campaign returning to each observer's observe() item naming the new term; an item that arrived before the campaign's return was printed counts as 0 (observer_early)".into(),
            format!("goal: TTL + 2 node round trips, the round trip being this run's median PING ({} per server, one at a time, on a plain connection)", super::rtt::PINGS),
            format!("holding cost: the servers' INFO cpu (used_cpu_user + used_cpu_sys) summed over the nodes, per second of each phase ({:.0} s each, one after another in this run): idle nodes, {n} renewed locks (the held scenario's run, TTL {} ms renewed every third), {n} elections (one campaign each, renewed by the same watchdog, coalesced); per lock/election = (phase - idle) / {n}", self.cost_for_s, self.ttl_ms, n = self.elections),
        ]
    }
}

fn ms(us: f64) -> String {
    format!("{:.1}", us / 1e3)
}

fn phase_line(p: &Phase) -> String {
    let per = p
        .per_held_ms_per_s
        .map_or_else(|| "-".into(), |v| format!("{:.4}", v));
    format!(
        "  {:<16} {:>6} {:>8.1} {:>12} {:>10.1} {:>8.1} {:>6}",
        p.what,
        p.held,
        p.server_cpu_ms_per_s,
        per,
        p.server_commands_per_s,
        p.client_cpu_ms_per_s,
        p.lost
    )
}

/// The text table.
pub fn render(r: &ElectionRecord) -> String {
    let f = &r.failover;
    let mut out = String::new();
    let t = &r.testbed;
    let servers = t
        .servers
        .first()
        .map_or_else(|| "unknown".into(), ServerInfo::label);
    out.push_str(&format!(
        "\nelection: {} trials, TTL {} ms, {} observers, {} nodes ({}, {servers}); {} cores, {}\n",
        f.trials.len(),
        r.ttl_ms,
        r.observers,
        t.nodes,
        t.node_source,
        t.machine.cores,
        t.machine.cpu
    ));
    out.push_str("                        p50      p90      p99      max   (ms)\n");
    let row = |name: &str, p: &Percentiles| {
        format!(
            "  {name:<18} {:>8} {:>8} {:>8} {:>8}\n",
            ms(p.p50),
            ms(p.p90),
            ms(p.p99),
            ms(p.max)
        )
    };
    out.push_str(&row("failover", &f.failover_us));
    out.push_str(&row("observer delay", &f.observer_delay_us));
    out.push_str(&row("node RTT (PING)", &r.rtt_us));
    out.push_str(&format!(
        "  observer items {}, before the campaign's return {}, missed {}; leaderships lost by a live leader {}\n",
        f.observer_items, f.observer_early, f.observer_missed, f.lost
    ));
    out.push_str(&format!(
        "failover p99 {} ms vs goal TTL + 2 RTT = {:.1} ms: {}\n",
        ms(f.failover_us.p99),
        r.failover_goal_ms(),
        met(f.failover_us.p99 / 1e3 <= r.failover_goal_ms())
    ));
    out.push_str(&format!(
        "observer delay p99 {} ms vs goal {OBSERVER_GOAL_MS:.0} ms: {}\n",
        ms(f.observer_delay_us.p99),
        met(f.observer_delay_us.p99 / 1e3 <= OBSERVER_GOAL_MS && f.observer_missed == 0)
    ));
    let h = &r.holding;
    out.push_str(&format!(
        "\nholding cost: server CPU over {:.0} s per phase, summed over the nodes\n",
        r.cost_for_s
    ));
    out.push_str(
        "  phase              held  ms CPU/s  per one ms/s  commands/s  client ms/s  lost\n",
    );
    for p in [&h.idle, &h.locks, &h.elections] {
        out.push_str(&phase_line(p));
        out.push('\n');
    }
    out.push_str(&format!(
        "  elections vs renewed locks (server CPU above idle): {}\n",
        h.elections_vs_locks
            .map_or_else(|| "-".into(), |v| format!("{v:.2}x"))
    ));
    out.push_str("notes:\n");
    for n in r.notes() {
        out.push_str(&format!("  - {n}\n"));
    }
    out
}

fn met(yes: bool) -> &'static str {
    if yes {
        "met"
    } else {
        "NOT met (one run on a shared machine: compare several)"
    }
}

/// The JSON document.
#[derive(Debug, Serialize)]
struct Document<'a> {
    machine: &'a Machine,
    versions: &'a Versions,
    servers: Vec<ServerOut>,
    config: Config<'a>,
    rtt_us: &'a Percentiles,
    failover: &'a Failover,
    goals: Vec<GoalOut>,
    holding: &'a Holding,
    notes: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Config<'a> {
    command: &'a str,
    scenario: &'static str,
    nodes: usize,
    node_source: &'static str,
    election: &'a str,
    election_ttl_ms: u64,
    trials: usize,
    candidates: usize,
    observers: usize,
    elections: usize,
    cost_for_s: f64,
}

/// The `--json` document.
pub fn json(r: &ElectionRecord) -> String {
    let t = &r.testbed;
    let doc = Document {
        machine: &t.machine,
        versions: &t.versions,
        servers: servers_out(&t.servers),
        config: Config {
            command: &t.command,
            scenario: "election",
            nodes: t.nodes,
            node_source: t.node_source,
            election: &r.name,
            election_ttl_ms: r.ttl_ms,
            trials: r.failover.trials.len(),
            candidates: CANDIDATES,
            observers: r.observers,
            elections: r.elections,
            cost_for_s: r.cost_for_s,
        },
        rtt_us: &r.rtt_us,
        failover: &r.failover,
        goals: r.goals(),
        holding: &r.holding,
        notes: r.notes(),
    };
    let mut text = serde_json::to_string_pretty(&doc).expect("the document serializes");
    text.push('\n');
    text
}
