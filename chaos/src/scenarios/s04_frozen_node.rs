//! Scenario 4: one node frozen with SIGSTOP for longer than the TTL, then SIGCONT. Attempts must stay
//! bounded by the per-node deadline (the frozen node is never waited for beyond it), and the backlog the
//! node executes on waking (late SETs, late replies) must never count: the checker shows no overlap.

use std::time::Duration;

use crate::checker::{ms, percentile};
use crate::env::{Ctx, Env, NODE_TIMEOUT_MS, TTL_MS};

use super::findings::Findings;
use super::load::under_load;
use super::support::{mark, wait};

/// Scheduling slack on top of the node deadline: the machine is small and shared.
const SLACK_MS: u64 = 150;

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    under_load(env, ctx).await?;
    let p = ctx.phase;
    let frozen = mark();
    env.nodes[2].freeze();
    wait(p.max(Duration::from_millis(TTL_MS * 3 / 2))).await;
    let thawed = mark();
    env.nodes[2].thaw();
    wait(p).await;
    env.top_up(ctx).await;
    let logs = env.finish().await?;

    let mut f = Findings::new(logs);
    let lat = f.logs.latencies_within(frozen, thawed);
    let grants = f.logs.grants_within(frozen, thawed).count();
    let p99 = percentile(&lat, 0.99);
    let max = lat.last().copied().unwrap_or(0);
    f.extra(format!(
        "while frozen: grants {grants}, attempt p99 {:.2} ms, max {:.2} ms (node deadline {NODE_TIMEOUT_MS} ms)",
        ms(p99),
        ms(max)
    ));
    f.expect(grants > 0, "no grant while one node was frozen");
    f.expect(
        p99 <= (NODE_TIMEOUT_MS + SLACK_MS) * 1_000_000,
        format!("attempt p99 while frozen above the node deadline + {SLACK_MS} ms"),
    );
    Ok(f)
}
