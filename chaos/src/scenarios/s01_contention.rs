//! Scenario 1: no fault, heavy contention — 16 holders in 4 processes on 4 resources.

use crate::env::{Ctx, Env};

use super::findings::Findings;
use super::load::PROCS;
use super::support::wait;

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    env.spawn_background(PROCS)?;
    wait(ctx.phase * 2).await;
    env.top_up(ctx).await;
    let logs = env.finish().await?;
    let mut f = Findings::new(logs);
    let (first, last) = f
        .logs
        .grants
        .iter()
        .fold((u64::MAX, 0), |(a, b), g| (a.min(g.t1), b.max(g.t1)));
    if last > first {
        let rate = f.logs.grants.len() as f64 / ((last - first) as f64 / 1e9);
        f.extra(format!("{rate:.0} grants/s"));
    }
    Ok(f)
}
