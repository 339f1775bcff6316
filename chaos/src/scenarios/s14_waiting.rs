//! Scenario 14: waiting `acquire` with the local queue, release notifications and local hand-off
//! (`Config::local_queue`, `notify_releases`, `max_local_handoffs` at their defaults: on, on, 4) under
//! the faults of [`super::mixed_faults`], with node 0 restarted **at once**, empty, and quarantined.
//!
//! Four processes of four tasks all wait for **one** resource. Inside a process only the head of the
//! local queue contends on the nodes, and a release may hand the lock to the next local task without a
//! round trip; other processes wake on the release's notification. The critical section is the
//! lost-update probe. Task 0 of process `c0` keeps every [`LINGER_EVERY`]-th lock it gets from the
//! nodes until only 40% of the TTL is left, so the task it hands the lock to must extend it on
//! take-over.
//!
//! Tasks of one process are holders like any other: the checker flags two of them holding at once.

use std::time::Duration;

use crate::client::LockMode;
use crate::env::{Ctx, Env, TTL_MS};
use crate::record::Via;

use super::findings::Findings;
use super::mixed_faults::{self, locking, Restart};

const RESOURCE: &str = "q0";
const PROCS: usize = 4;
/// Every how many of its grants from the nodes task `c0.0` lingers.
const LINGER_EVERY: u64 = 3;
/// Shortest window of the timeline: longer than a lingering holder keeps the lock (< 0.6 TTL), so
/// every window has time for grants.
const LINGER_WINDOW: Duration = Duration::from_millis(TTL_MS);

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    let restart = Restart::AtOnce;
    mixed_faults::prepare(env).await?;
    for i in 0..PROCS {
        let mut args = locking(env, &format!("c{i}"), restart, LockMode::Wait, [RESOURCE]);
        args.retries = super::s12_multi_resource::RETRIES;
        if i == 0 {
            args.linger_every = LINGER_EVERY;
        }
        env.spawn(&args, &[])?;
    }
    let windows = mixed_faults::play(env, ctx, restart, LINGER_WINDOW).await;
    env.top_up(ctx).await;
    let logs = env.finish().await?;

    let mut f = Findings::new(logs);
    mixed_faults::judge_windows(&mut f, &windows);
    let via = |v: Via| f.logs.grants.iter().filter(|g| g.via == v).count();
    let (handoffs, extended) = (via(Via::Handoff), via(Via::HandoffExtended));
    let from_nodes = f.logs.grants.len() - handoffs - extended;
    let by_process: Vec<String> = (0..PROCS)
        .map(|i| {
            let p = format!("c{i}");
            let n = f.logs.grants.iter().filter(|g| g.process() == p).count();
            format!("{p} {n}")
        })
        .collect();
    let failed = f.gave_up();
    f.extra(format!(
        "grants from the nodes {from_nodes}, handed over locally {} (extended on take-over {extended}); \
         by process {}; acquire calls that gave up: {}",
        handoffs + extended,
        by_process.join(", "),
        failed
    ));
    f.expect(handoffs + extended > 0, "no local hand-off happened");
    f.expect(from_nodes > 0, "no grant came from the nodes");
    Ok(f)
}
