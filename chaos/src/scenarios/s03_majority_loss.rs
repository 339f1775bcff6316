//! Scenario 3: three of five nodes killed. No grant may happen while the majority is down; after the
//! restart (delayed past the TTL, so inside the model) grants resume: how long that takes is measured.

use std::time::Duration;

use crate::checker::{ms, percentile};
use crate::env::{Ctx, Env, TTL_MS};

use super::findings::Findings;
use super::load::under_load;
use super::support::{mark, ms_between, wait};

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    under_load(env, ctx).await?;
    let p = ctx.phase;
    for node in &mut env.nodes[..3] {
        node.kill9();
    }
    let down = mark();
    wait(p.max(Duration::from_millis(TTL_MS * 3 / 2))).await;
    let restart = mark();
    for node in &mut env.nodes[..3] {
        node.restart();
    }
    let up = mark();
    // The engine reconnects with exponential backoff (capped at 2 s): leave it time to.
    wait((p * 2).max(Duration::from_secs(3))).await;
    env.top_up(ctx).await;
    let logs = env.finish().await?;

    let mut f = Findings::new(logs);
    let during = f.logs.grants_within(down, restart).count();
    let failing = f.logs.latencies_within(down, restart);
    let first = f.logs.first_return(|g| g.t1 > up);
    f.extra(format!(
        "grants while the majority was down {during} (attempts {}, p99 {:.2} ms)",
        failing.len(),
        ms(percentile(&failing, 0.99))
    ));
    match first {
        Some(t) => f.extra(format!(
            "first grant {:.0} ms after the nodes were back",
            ms_between(up, t)
        )),
        None => f.extra("no grant after recovery"),
    }
    f.expect(
        during == 0,
        format!("{during} grants while 3 of 5 nodes were down"),
    );
    f.expect(first.is_some(), "no grant after the majority came back");
    Ok(f)
}
