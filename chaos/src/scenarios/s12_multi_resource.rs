//! Scenario 12: multi-resource locks (`acquire_many`) under the faults of [`super::mixed_faults`]
//! (node 0 down for more than a TTL, then restarted empty; a frozen node; proxy delays).
//!
//! Four resources in a ring, `m0`..`m3`; each round of a pair client locks a pair of neighbours
//! (`{m0,m1}`, `{m1,m2}`, `{m2,m3}`, `{m3,m0}`, in a random order) and does the lost-update probe on
//! both counters. Neighbouring pairs share a resource and must exclude each other; opposite pairs
//! share none and may hold at the same time. A fourth process (2 tasks, 20 ms pauses) takes single
//! resources of the same ring with `try_acquire_fenced`: a single-resource lock and a pair that
//! includes it must exclude each other as well (they use the same key). The checker treats a pair's grant as a critical
//! section on each of its resources.

use std::time::Duration;

use crate::client::LockMode;
use crate::env::{Ctx, Env};
use crate::record::LockKind;

use super::findings::Findings;
use super::mixed_faults::{self, client_args, locking, Restart};

/// The ring of resources.
const RING: [&str; 4] = ["m0", "m1", "m2", "m3"];
/// Processes locking pairs; one more locks single resources.
const PAIR_PROCS: usize = 3;
/// Tasks of the single-resource process, and their pause after each round.
const SINGLE_TASKS: usize = 2;
const SINGLE_PAUSE_US: u64 = 20_000;
/// `retry_count` of the waiting clients.
pub const RETRIES: u32 = 10;

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    let restart = Restart::AfterTtl;
    mixed_faults::prepare(env).await?;
    let ring: Vec<String> = RING.iter().map(|r| r.to_string()).collect();
    for i in 0..PAIR_PROCS {
        let mut args = locking(env, &format!("c{i}"), restart, LockMode::Many, ring.clone());
        args.retries = RETRIES;
        env.spawn(&args, &[])?;
    }
    // Fewer, slower single-resource holders: one attempt each, they would otherwise keep a resource of
    // most pairs busy, and the pairs, waiting 50-100 ms between attempts, would mostly lose to them.
    let mut single = client_args(env, "s0", restart);
    single.resources = ring;
    single.tasks = SINGLE_TASKS;
    single.pause_us = SINGLE_PAUSE_US;
    env.spawn(&single, &[])?;
    // With node 4 late and node 1 delayed, a pair needs both its resources on three of the four
    // other nodes, one of them 40 ms away: a 0.6 s `--short` window held 5-24 grants, and none once
    // under the parallel test suite. A TTL keeps it clear of 0 on a loaded machine.
    let min_window = Duration::from_millis(crate::env::TTL_MS);
    let windows = mixed_faults::play(env, ctx, restart, min_window).await;
    env.top_up(ctx).await;
    let logs = env.finish().await?;

    let mut f = Findings::new(logs);
    mixed_faults::judge_windows(&mut f, &windows);
    let pairs: Vec<(String, usize)> = (0..RING.len())
        .map(|i| {
            let mut pair = [RING[i], RING[(i + 1) % RING.len()]];
            pair.sort_unstable();
            let label = pair.join("+");
            let n = f.logs.grants.iter().filter(|g| g.resource == label).count();
            (label, n)
        })
        .collect();
    let singles = f
        .logs
        .grants
        .iter()
        .filter(|g| g.kind == LockKind::Exclusive)
        .count();
    let figures: Vec<String> = pairs.iter().map(|(p, n)| format!("{{{p}}} {n}")).collect();
    f.extra(format!(
        "pair grants {}, single-resource grants {singles}",
        figures.join(", ")
    ));
    for (pair, n) in &pairs {
        f.expect(*n > 0, format!("the pair {{{pair}}} was never granted"));
    }
    f.expect(singles > 0, "no single-resource grant among the pairs");
    Ok(f)
}
