//! Scenario 7: a node restarted at once, without persistence, while it holds part of a lock. This is
//! outside Redlock's model (restarts must be delayed by the TTL, or keys persisted), so the checker must
//! show the overlap — proof that it is not blind. Choreographed, so it happens every run:
//!
//! 1. nodes 3 and 4 are down while owner A acquires: A holds nodes {0, 1, 2};
//! 2. nodes 3 and 4 come back empty and node 0 is killed and restarted at once, empty;
//! 3. owner B acquires: nodes 0, 3, 4 are free, a majority — B holds {0, 3, 4} while A still holds a
//!    valid lock. Both do their read-modify-write of the counter: one increment is lost.
//!
//! Background clients run throughout (and may overlap too). With `--expect-quarantine` every engine of
//! the scenario turns on the crashed-node quarantine (`Config::quarantine`, with the TTL as the
//! maximum lock lifetime): restarted nodes do not vote, B must be refused, and the scenario expects no
//! overlap and no lost update instead. Scenario 17 runs the same choreography ([`choreography`]) on
//! nodes that persist every write (`appendfsync always`): there the keys come back and B is refused.

use std::time::Duration;

use crate::env::{Ctx, Env};

use super::findings::Findings;
use super::owners::{key_owners, Owners};
use super::support::{acquire_within, engine_with, wait};

const RESOURCE: &str = "x7";
/// Long enough for the whole interleaving to happen inside both validities; short enough that, with the
/// quarantine, the freshly started nodes become old enough to vote without a long wait.
const TTL: Duration = Duration::from_secs(3);
/// How long B keeps trying: in the model-breaking case it wins at once.
const B_TRIES: Duration = Duration::from_secs(1);

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    let quarantine = ctx.expect_quarantine.then_some(TTL);
    for i in 0..super::load::PROCS {
        let mut args = env.client_args(&format!("c{i}"));
        args.quarantine = ctx.expect_quarantine;
        env.spawn(&args, &[])?;
    }
    // With the quarantine, every node must first be up for longer than the TTL (uptime is in seconds).
    let settle = if ctx.expect_quarantine {
        TTL + Duration::from_millis(1500)
    } else {
        Duration::ZERO
    };
    wait(ctx.phase.max(settle)).await;
    let restart = choreography(env, RESOURCE, quarantine).await?;
    wait(ctx.phase).await;
    env.top_up(ctx).await;
    let logs = env.finish().await?;
    let mut f = Findings::new(logs);
    f.extra(format!(
        "A held nodes 0-2; after node 0's instant restart (DBSIZE {} as it first answered) B was {}",
        restart.reloaded[2], restart.b
    ));
    Ok(f)
}

/// What the choreography saw.
pub struct Restart {
    /// Whether B was granted.
    pub b_granted: bool,
    /// B's outcome, for the summary line (`granted (key … by value: {0,3,4} {1,2})` or `refused (…)`).
    pub b: String,
    /// The lock key's census right after the restarts, before B tries: `{1,2}` without persistence.
    pub census: String,
    /// `DBSIZE` of nodes 3, 4 and 0 just after each answered its first `PING` after the restart:
    /// what it brought back (a client reconnecting within those few ms may have added a key).
    pub reloaded: [u64; 3],
}

/// Steps 1-3 above on `resource` with locks of [`TTL`] (scenario 17 runs them on durable nodes):
/// every restart is a `kill -9` and an instant start with the node's own spec. The engines quarantine
/// restarted nodes for locks of at most `quarantine` if given.
pub async fn choreography(
    env: &mut Env,
    resource: &'static str,
    quarantine: Option<Duration>,
) -> Result<Restart, String> {
    let mut owners = Owners::new(env, resource, TTL).await?;
    let a = engine_with(env.node_urls(), quarantine).await?;
    env.nodes[3].kill9();
    env.nodes[4].kill9();
    let acq_a = acquire_within(&a, resource, TTL, Duration::from_secs(3))
        .await
        .map_err(|e| format!("A could not acquire on nodes 0-2: {e}"))?;
    let held_a = owners.enter("A", acq_a).await?;

    let mut reloaded = [0; 3];
    // The fault is node 0: instantly back; without persistence empty, A's key forgotten.
    for (slot, i) in [3, 4, 0].into_iter().enumerate() {
        env.nodes[i].restart();
        let dbsize = env.nodes[i].try_cmd(&[b"DBSIZE"]);
        reloaded[slot] = dbsize.and_then(|n| n.parse().ok()).unwrap_or(0);
    }
    let census = key_owners(&env.nodes, resource);

    let b = engine_with(env.node_urls(), quarantine).await?;
    let (b_granted, b_outcome) = owners.b_tries(&b, &env.nodes, B_TRIES).await?;
    // A, which read before B, writes last: B's increment is overwritten.
    owners.leave(&a, held_a).await?;
    Ok(Restart {
        b_granted,
        b: b_outcome,
        census,
        reloaded,
    })
}
