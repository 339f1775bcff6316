//! `--scenario election`: the library's leader election (`redlock.election(name)`) measured — how
//! long a failover takes when the leader's process is killed, how soon observers hear of the new
//! leader, and what holding leadership costs the servers next to holding renewed locks.
//!
//! - [`args`]: its options (`--trials`, `--election-ttl`, `--observers`, `--elections`,
//!   `--cost-for`) and the hidden `--election-child`;
//! - [`child`]: a candidate or observer process (loadgen re-executed), one line per event;
//! - [`cast`]: those processes seen from the parent: started, read, killed with `kill -9`, stopped;
//! - [`failover`]: the trials (kill the leader, time the next election and the observers' items);
//! - [`rtt`]: the node round trip of the goal, measured in the same run;
//! - [`cost`]: server CPU per second for idle nodes, N renewed locks and N elections;
//! - [`report`]: the record, its text table and its JSON document.
//!
//! Order of a run: the round trip, the failover trials, then the three cost phases (after the
//! trials' processes are gone, so their renewals are not in the cost).

pub mod args;
pub mod cast;
pub mod child;
pub mod cost;
pub mod failover;
pub mod report;
pub mod rtt;

use crate::cli::Plan;
use crate::nodes::addr::NodeUrl;
use crate::nodes::health::Health;
use crate::nodes::probe::ServerInfo;

use args::Spec;
use report::ElectionRecord;

/// Runs the election scenario on `urls` (already checked: `nodes`, `servers`).
pub async fn run(
    plan: &Plan,
    spec: &Spec,
    urls: &[String],
    nodes: &[NodeUrl],
    servers: Vec<ServerInfo>,
) -> Result<ElectionRecord, String> {
    if nodes.len() < 3 {
        return Err(format!(
            "--scenario election needs at least 3 nodes (an election refuses fewer), got {}",
            nodes.len()
        ));
    }
    let health = Health::start(nodes)?;
    let loadavg_start = crate::machine::loadavg();
    // Keys of this run only, so a rerun on the same nodes starts from no leader.
    let tag = format!("{:x}", crate::overtakes::now_ns() % 0xff_ffff);
    let rtt_us = rtt::ping_rtt(nodes.to_vec()).await?;
    let name = format!("lg{tag}:election");
    let failover = failover::run(urls, spec, &name, &health, plan.quiet).await?;
    let holding = tokio::select! {
        h = cost::run(urls, nodes, spec, &plan.workload, &tag, plan.quiet) => h?,
        why = health.lost() => return Err(why),
    };
    Ok(ElectionRecord {
        testbed: crate::session::testbed(plan, servers, nodes.len(), loadavg_start),
        name,
        ttl_ms: spec.ttl.as_millis() as u64,
        observers: spec.observers,
        elections: spec.elections,
        cost_for_s: spec.cost_for.as_secs_f64(),
        rtt_us,
        failover,
        holding,
    })
}
