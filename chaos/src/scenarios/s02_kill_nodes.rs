//! Scenario 2: `kill -9` one node, then a second, while locks are held and being acquired; restart
//! them. Each node stays down for two phases, longer than the TTL, so its restart (empty) is inside the
//! model: every key it held had expired anyway.

use crate::env::{Ctx, Env};

use super::findings::Findings;
use super::load::under_load;
use super::support::{mark, wait};

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    under_load(env, ctx).await?;
    let p = ctx.phase;
    let kill0 = mark();
    env.nodes[0].kill9();
    wait(p).await;
    let kill1 = mark();
    env.nodes[1].kill9();
    wait(p).await;
    let up0 = mark();
    env.nodes[0].restart();
    wait(p).await;
    env.nodes[1].restart();
    let healed = mark();
    wait(p).await;
    env.top_up(ctx).await;
    let logs = env.finish().await?;

    let mut f = Findings::new(logs);
    let one_down = f.logs.grants_within(kill0, kill1).count();
    let two_down = f.logs.grants_within(kill1, up0).count();
    let after = f.logs.grants.iter().filter(|g| g.t0 > healed).count();
    f.extra(format!(
        "grants with 1 node down {one_down}, with 2 down {two_down}, after both restarts {after}"
    ));
    f.expect(one_down > 0, "no grant with one node down");
    f.expect(
        two_down > 0,
        "no grant with two nodes down (a majority was up)",
    );
    f.expect(after > 0, "no grant after the restarts");
    Ok(f)
}
