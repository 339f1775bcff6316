//! Scenario 17: scenario 7's choreography (`kill -9` of nodes holding part of a lock and an instant
//! restart, quarantine off) on nodes that persist every write: `appendonly yes`, `appendfsync always`,
//! each node's AOF in a directory of its own under the scenario's log directory. Redis writes and
//! fsyncs the AOF before it sends the replies of an event-loop iteration, so every key a client was
//! told about is on disk when the node is killed, and the restarted node reloads it. Inside the
//! model: A's key is back on node 0, B is refused, and any overlap or lost update is a bug.
//!
//! So that the scenario can fail if persistence were silently off, it checks what the restarted nodes
//! hold: the key census right after the restarts must find A's key on node 0 with the same value as
//! on nodes 1 and 2 (`{0,1,2}`; scenario 7's, without persistence, is `{1,2}`); each restarted node
//! must answer its first `DBSIZE` with keys (the fenced locks' counters have no TTL; scenario 7's
//! node 0 says 0, or a key or two a reconnecting client wrote in those ms); every node must report
//! `aof_enabled:1`.

use crate::env::{Ctx, Env};
use testkit::NodeSpec;

use super::findings::Findings;
use super::load::under_load;
use super::s07_restart::choreography;
use super::support::wait;

const RESOURCE: &str = "x17";

/// Every lock node with `appendfsync always`, its AOF in `dir/node-<i>`.
pub fn make_durable(env: &mut Env) {
    for (i, node) in env.nodes.iter_mut().enumerate() {
        node.restart_as(NodeSpec::durable(env.dir.join(format!("node-{i}"))).tied());
    }
}

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    make_durable(env);
    under_load(env, ctx).await?;
    let restart = choreography(env, RESOURCE, None).await?;
    wait(ctx.phase).await;
    env.top_up(ctx).await;
    let aof = env
        .nodes
        .iter()
        .filter(|n| {
            let info = n.try_cmd(&[b"INFO", b"persistence"]).unwrap_or_default();
            info.contains("aof_enabled:1")
        })
        .count();
    let logs = env.finish().await?;

    let mut f = Findings::new(logs);
    let [n3, n4, n0] = restart.reloaded;
    f.extra(format!(
        "A held nodes 0-2; kill -9 and instant restart of nodes 3, 4, 0 with appendfsync always \
         (DBSIZE {n3}/{n4}/{n0} as each first answered): key census {}, B was {}",
        restart.census, restart.b
    ));
    f.expect(
        aof == env.nodes.len(),
        format!("only {aof} nodes report aof_enabled:1"),
    );
    f.expect(
        restart.reloaded.iter().all(|&n| n > 0),
        "a restarted node came back with no keys: the AOF was not reloaded",
    );
    f.expect(
        restart.census == "{0,1,2}",
        format!(
            "node 0 did not bring A's key back from its AOF (census {})",
            restart.census
        ),
    );
    f.expect(!restart.b_granted, "B was granted while A held the lock");
    Ok(f)
}
