//! Scenario 6: latency and blackholes between clients and nodes, through one [`Proxy`] per node: delay
//! (below and above the node deadline), drop, hang (with late delivery), reset, a hung majority,
//! connections cut in silence on two nodes (the clients must notice and reconnect: two other nodes
//! hung after that leave a majority only with the cut ones back), and delays close to the TTL. An
//! acquire must fail rather than return a lock with validity <= 0.
//!
//! Delays close to the TTL only matter to a client whose node deadline is close to its TTL, so a second
//! kind of client runs alongside the background: TTL 200 ms, node deadline 199 ms, no minimum validity.
//! With a per-direction delay `d`, its round trip is ~2d, so validity = 200 - 2d - 4 ms (drift): the
//! sweep crosses from "granted with a few ms" to "majority won but validity <= 0" to "timed out".

use std::time::Duration;

use crate::checker::{ms, Logs};
use crate::env::{Ctx, Env, NODES};
use crate::record::Outcome;
use testkit::proxy::{Mode, Mode::*};

use super::findings::Findings;
use super::support::{mark, wait};

/// The near-TTL client's TTL and node deadline.
const NEAR_TTL_MS: u64 = 200;
const NEAR_DEADLINE_MS: u64 = 199;
/// Per-direction delays of the near-TTL sweep.
const NEAR_DELAYS_MS: [u64; 4] = [90, 96, 98, 100];

/// The step after the silent cut: long enough for every client to find its cut connections dead
/// (one to two `connect_timeout`s of 1 s after the first unanswered request) and reconnect.
const AFTER_CUT: Duration = Duration::from_millis(3500);

/// One step of the timeline: a name, the mode of each proxy, how many proxies (the first ones) cut
/// their connections in silence as it starts, and its length when not the usual one.
struct Step {
    name: String,
    modes: [Mode; NODES],
    sever: usize,
    len: Option<Duration>,
}

impl Step {
    /// A step of the usual length that only sets the proxies' modes.
    fn modes(name: impl Into<String>, modes: [Mode; NODES]) -> Self {
        Self {
            name: name.into(),
            modes,
            sever: 0,
            len: None,
        }
    }
}

fn on_first(n: usize, mode: Mode) -> [Mode; NODES] {
    std::array::from_fn(|i| if i < n { mode } else { Pass })
}

/// Nodes 2 and 3 hung, the rest passing: a majority only with nodes 0 and 1.
fn on_middle(mode: Mode) -> [Mode; NODES] {
    std::array::from_fn(|i| if i == 2 || i == 3 { mode } else { Pass })
}

fn timeline() -> Vec<Step> {
    let ms = Duration::from_millis;
    let mut steps = vec![
        ("pass", [Pass; NODES]),
        ("delay 20 ms on 2 nodes", on_first(2, Delay(ms(20)))),
        ("delay 80 ms on 2 nodes", on_first(2, Delay(ms(80)))),
        ("drop on 2 nodes", on_first(2, Drop)),
        ("pass", [Pass; NODES]),
        ("hang on 2 nodes", on_first(2, Hang)),
        ("pass (late delivery)", [Pass; NODES]),
        ("reset on 2 nodes", on_first(2, Reset)),
        ("pass", [Pass; NODES]),
        ("hang on 3 nodes", on_first(3, Hang)),
        ("pass (late delivery)", [Pass; NODES]),
    ]
    .into_iter()
    .map(|(name, modes)| Step::modes(name, modes))
    .collect::<Vec<_>>();
    steps.push(Step {
        name: "cut in silence on 2 nodes".into(),
        modes: [Pass; NODES],
        sever: 2,
        len: Some(AFTER_CUT),
    });
    steps.push(Step::modes(CUT_CHECK, on_middle(Hang)));
    steps.push(Step::modes("pass (late delivery)", [Pass; NODES]));
    for d in NEAR_DELAYS_MS {
        steps.push(Step::modes(
            format!("near-TTL delay {d} ms"),
            [Delay(ms(d)); NODES],
        ));
    }
    steps.push(Step::modes("pass", [Pass; NODES]));
    steps
}

/// The step whose grants show the cut nodes back: nodes 2 and 3 hung after the cut.
const CUT_CHECK: &str = "hang on nodes 2 and 3 after the cut";

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    env.start_proxies().await?;
    for i in 0..super::load::PROCS {
        let mut args = env.client_args(&format!("c{i}"));
        args.nodes = env.proxy_urls();
        env.spawn(&args, &[])?;
    }
    let mut near = env.client_args("near");
    near.nodes = env.proxy_urls();
    near.storage = None;
    near.resources = vec!["n0".into()];
    near.tasks = 2;
    near.ttl_ms = NEAR_TTL_MS;
    near.node_timeout_ms = NEAR_DEADLINE_MS;
    near.min_validity = 0.0;
    near.cs_sleep_us = 0;
    near.extend_every = 0;
    near.pause_us = 20_000;
    env.spawn(&near, &[])?;

    let step_len = (ctx.phase / 2).max(Duration::from_millis(600));
    let mut marks = Vec::new();
    for step in timeline() {
        for (proxy, mode) in env.proxies.iter().zip(step.modes) {
            proxy.set(mode);
        }
        for proxy in env.proxies.iter().take(step.sever) {
            proxy.sever();
        }
        let start = mark();
        wait(step.len.unwrap_or(step_len)).await;
        marks.push((step.name, start, mark()));
    }
    env.top_up(ctx).await;
    let logs = env.finish().await?;

    let mut f = Findings::new(logs);
    let (_, hung_from, hung_to) = marks
        .iter()
        .find(|(name, _, _)| name == "hang on 3 nodes")
        .cloned()
        .expect("the timeline has a hung majority");
    let hung_grants = f.logs.grants_within(hung_from, hung_to).count();
    let hung_lat = f.logs.latencies_within(hung_from, hung_to);
    f.extra(format!(
        "majority hung: grants {hung_grants}, attempt max {:.0} ms (node deadlines 50 and {NEAR_DEADLINE_MS} ms)",
        ms(hung_lat.last().copied().unwrap_or(0))
    ));
    f.expect(hung_grants == 0, "a grant while 3 of 5 nodes were hung");
    let (_, cut_from, cut_to) = marks
        .iter()
        .find(|(name, _, _)| name == CUT_CHECK)
        .cloned()
        .expect("the timeline has the cut's check");
    let back = f.logs.grants_within(cut_from, cut_to).count();
    f.extra(format!(
        "after 2 nodes' connections were cut in silence, with 2 others hung: grants {back}"
    ));
    f.expect(
        back > 0,
        "no grant with 2 nodes hung after 2 others' connections were cut: the cut ones never came back",
    );

    let mut near_logs = Logs::default();
    near_logs
        .read_file(&near.log)
        .map_err(|e| format!("near-TTL log: {e}"))?;
    let sweep_from = marks
        .iter()
        .find(|(name, _, _)| name.starts_with("near-TTL"))
        .map_or(0, |m| m.1);
    let sweep_to = marks.last().map_or(0, |m| m.1);
    let in_sweep = |t0: u64| (sweep_from..sweep_to).contains(&t0);
    let count = |o: Outcome| {
        near_logs
            .attempts
            .iter()
            .filter(|(t0, _, out)| in_sweep(*t0) && *out == o)
            .count()
    };
    let granted: Vec<u64> = near_logs
        .grants
        .iter()
        .filter(|g| in_sweep(g.t0))
        .map(|g| g.vu0.saturating_sub(g.t1))
        .collect();
    let attempts = near_logs.attempts.iter().filter(|a| in_sweep(a.0)).count();
    f.extra(format!(
        "near-TTL sweep {NEAR_DELAYS_MS:?} ms: attempts {attempts}, granted {} (least validity left {:.1} ms), \
         refused for validity {}, timed out {}",
        granted.len(),
        ms(granted.iter().copied().min().unwrap_or(0)),
        count(Outcome::Validity),
        count(Outcome::Quorum)
    ));
    f.expect(attempts > 0, "no attempt during the near-TTL sweep");
    Ok(f)
}
