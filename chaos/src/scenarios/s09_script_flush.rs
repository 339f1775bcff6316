//! Scenario 9: `SCRIPT FLUSH` on every node, again and again, while clients release and extend (both
//! are scripts). The engine's `EVALSHA` → `NOSCRIPT` → `EVAL` fallback must hide it: no release or
//! extend of a valid lock fails while the nodes answer within the node deadline, and the scripts are
//! back in every node's cache afterwards.
//!
//! A call that failed only after the node deadline had a node that did not answer in time (a flush is
//! synchronous, and this machine is small and shared): that is a slow node, not a surfaced `NOSCRIPT`,
//! so it is counted and shown but does not fail the scenario.

use std::time::Duration;

use crate::checker;
use crate::env::{Ctx, Env, NODE_TIMEOUT_MS};

use super::findings::Findings;
use super::support::wait;

const FLUSH_EVERY: Duration = Duration::from_millis(100);

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    for i in 0..super::load::PROCS {
        let mut args = env.client_args(&format!("c{i}"));
        args.extend_every = 2; // many script calls
        env.spawn(&args, &[])?;
    }
    wait(ctx.phase / 2).await;
    let until = tokio::time::Instant::now() + ctx.phase * 2;
    let mut flushes = 0;
    while tokio::time::Instant::now() < until {
        for reply in env.on_all_nodes(&[b"SCRIPT", b"FLUSH"]) {
            if reply != "OK" {
                return Err(format!("SCRIPT FLUSH answered {reply}"));
            }
        }
        flushes += 1;
        wait(FLUSH_EVERY).await;
    }
    wait(ctx.phase / 2).await;
    env.top_up(ctx).await;
    let logs = env.finish().await?;
    let cached = cached_scripts(env);
    let scripts = redlock_engine::__private::scripts().len();

    let mut f = Findings::new(logs);
    let s = checker::summarize(&f.logs);
    // `E holder op took_ns message`: split the failures by whether every node had time to answer.
    let deadline_ns = NODE_TIMEOUT_MS * 1_000_000;
    let slow = f
        .logs
        .errors
        .iter()
        .filter(|e| {
            e.split(' ')
                .nth(2)
                .and_then(|t| t.parse::<u64>().ok())
                .is_some_and(|took| took >= deadline_ns)
        })
        .count();
    let fast = f.logs.errors.len() - slow;
    f.extra(format!(
        "SCRIPT FLUSH x{flushes} on all nodes, extends {}, release/extend errors within the node \
         deadline {}, after it (slow node) {}, scripts cached again on {cached} of {} node/script pairs",
        s.extends,
        fast,
        slow,
        scripts * env.nodes.len()
    ));
    f.expect(s.extends > 0, "no extend was exercised");
    f.expect(
        fast == 0,
        "a release or extend of a valid lock failed although every node answered",
    );

    f.expect(
        cached == scripts * env.nodes.len(),
        "a script was not reloaded",
    );
    Ok(f)
}

/// How many (node, script) pairs have the script in the node's cache again.
fn cached_scripts(env: &Env) -> usize {
    let mut n = 0;
    for (_, sha1) in redlock_engine::__private::scripts() {
        for node in &env.nodes {
            if node.cmd(&[b"SCRIPT", b"EXISTS", sha1.as_bytes()]) == "1" {
                n += 1;
            }
        }
    }
    n
}
