//! Scenario 11: a majority restarts at once without persistence, with the engine's crashed-node
//! quarantine on. Nodes 0-2 are killed and restarted empty (instantly, as in scenario 7 but three of
//! them) while the clients run. Each restarted node must stay out of every quorum until it has been up
//! for `max_ttl` (the maximum lock lifetime), and a quorum needs at least one of them: so **no grant**
//! from the restart until `max_ttl` later, and grants again after that.
//!
//! `max_ttl` is [`MAX_TTL`] (2 s, above the clients' 1 s TTL) to keep the scenario short. The engine
//! reads a node's age from `INFO server`'s `uptime_in_seconds`, the difference of two whole-second
//! Unix times: a node 1.01 s old may already report 2 s. So the window checked for zero grants ends
//! [`UPTIME_SLACK`] before `max_ttl`. The clients start with the nodes, which are themselves fresh:
//! they are quarantined for the first `max_ttl` too, so the scenario waits for grants before the fault.

use std::time::Duration;

use crate::env::{Ctx, Env, TTL_MS};

use super::findings::Findings;
use super::support::{mark, ms_between, wait};

/// The clients' maximum lock lifetime: how long a restarted node is quarantined.
pub const MAX_TTL: Duration = Duration::from_millis(2000);
/// `uptime_in_seconds` resolution: a node may look up to 1 s older than it is.
const UPTIME_SLACK: Duration = Duration::from_millis(1000);
// The clients' TTL must stay below the maximum lifetime (the engine refuses longer locks).
const _: () = assert!((TTL_MS as u128) < MAX_TTL.as_millis());

/// Nodes restarted: a majority of 5.
const RESTARTED: usize = 3;

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    for i in 0..super::load::PROCS {
        let mut args = env.client_args(&format!("c{i}"));
        args.quarantine = true;
        args.max_ttl_ms = Some(MAX_TTL.as_millis() as u64);
        env.spawn(&args, &[])?;
    }
    // The fresh nodes leave their start-up quarantine after MAX_TTL; then the clients work a while.
    let warm = mark();
    wait(MAX_TTL + UPTIME_SLACK + ctx.phase / 2).await;
    // Kill all three first: restarting them one by one would leave an old majority (nodes 1-4, then
    // 2-4 plus …) voting in between. From `kill` on, only two old nodes are up.
    for node in &mut env.nodes[..RESTARTED] {
        node.kill9();
    }
    let kill = mark();
    for node in &mut env.nodes[..RESTARTED] {
        node.restart(); // start again at once, empty, on the same port
    }
    let up = mark();
    // Quarantine, then the engine's reconnect backoff (capped at 2 s), then a working phase.
    wait(MAX_TTL + ctx.phase.max(Duration::from_secs(2))).await;
    env.top_up(ctx).await;
    let logs = env.finish().await?;

    let mut f = Findings::new(logs);
    let before = f.logs.grants_within(warm, kill).count();
    let quiet_until = kill + (MAX_TTL - UPTIME_SLACK).as_nanos() as u64;
    let during = f.logs.grants_within(kill, quiet_until).count();
    // Grants whose attempt started after the kill: any earlier one was decided by the old nodes.
    let first = f.logs.first_return(|g| g.t0 > kill);
    let after = f.logs.grants.iter().filter(|g| g.t0 > kill).count();
    f.extra(format!(
        "{RESTARTED} of 5 nodes killed, restarted within {:.0} ms with max_ttl {} ms: grants before {before}, \
         in the first {} ms after {during}, after {after}",
        ms_between(kill, up),
        MAX_TTL.as_millis(),
        (MAX_TTL - UPTIME_SLACK).as_millis(),
    ));
    match first {
        Some(t) => f.extra(format!(
            "first grant after restart: {:.0} ms",
            ms_between(kill, t)
        )),
        None => f.extra("no grant after the restart"),
    }
    f.expect(before > 0, "no grant before the restart");
    f.expect(
        during == 0,
        format!(
            "{during} grants within max_ttl - {} ms of a majority restart (quarantine not enforced)",
            UPTIME_SLACK.as_millis()
        ),
    );
    f.expect(
        first.is_some_and(|t| t >= quiet_until),
        "a grant before the quarantine could have ended",
    );
    f.expect(first.is_some(), "no grant after the quarantine ended");
    Ok(f)
}
