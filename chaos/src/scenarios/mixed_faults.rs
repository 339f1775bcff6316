//! The fault timeline of scenarios 12-14, 18 and 19, which put the other lock kinds (multi-resource,
//! read-write, waiting `acquire` with its local queue; semaphores, the fair lock) through the faults
//! scenarios 2, 4 and 6 apply to `try_acquire` alone. Every client talks to the nodes through a [`testkit::Proxy`], and a
//! majority stays usable throughout, so every window must show grants.
//!
//! | window | faults |
//! |---|---|
//! | `warm` | none (with the quarantine: the clients' start-up quarantine of the fresh nodes) |
//! | `node 0 down` | `kill -9` node 0 ([`Restart::AfterTtl`]: it stays down) or killed and restarted at once, empty ([`Restart::AtOnce`]: quarantined); proxies of nodes 1 and 2 delay 20 ms each way |
//! | `node 3 frozen` | node 0 back (`AfterTtl`: restarted now, empty, after more than a TTL); node 3 frozen (SIGSTOP) |
//! | `node 4 late` | node 3 thawed (its backlog runs); node 4 delayed 80 ms each way, beyond the 50 ms node deadline, so its replies always come too late; node 1 delayed 20 ms |
//! | `healed` | none |
//!
//! An instant restart is inside Redlock's model only with the quarantine: the restarted node has
//! forgotten its keys, so it must not vote for one maximum lock lifetime. `AtOnce` therefore needs
//! clients started with `--quarantine` (see [`quarantined`]); `AfterTtl` needs nothing, as every key
//! the node held has expired by the time it is back.

use std::time::Duration;

use crate::client::{ClientArgs, LockMode};
use crate::env::{Ctx, Env, TTL_MS};
use testkit::proxy::Mode::{self, Delay, Pass};

use super::findings::Findings;
use super::support::{mark, wait};

/// How node 0 comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// Down for longer than the TTL, then restarted empty: inside the model without quarantine.
    AfterTtl,
    /// Restarted at once, empty: inside the model only because the clients quarantine it.
    AtOnce,
}

/// One window of the timeline: its name and `[from, to)` on `CLOCK_MONOTONIC`.
#[derive(Debug, Clone)]
pub struct Window {
    pub name: &'static str,
    pub from: u64,
    pub to: u64,
}

/// `args` for a client of these scenarios: through the proxies, and quarantined when `restart` needs it.
pub fn client_args(env: &Env, id: &str, restart: Restart) -> ClientArgs {
    let mut args = env.client_args(id);
    args.nodes = env.proxy_urls();
    if restart == Restart::AtOnce {
        quarantined(&mut args);
    }
    args
}

/// [`client_args`] for a client whose tasks take `resources` with `lock`.
pub fn locking<R: Into<String>>(
    env: &Env,
    id: &str,
    restart: Restart,
    lock: LockMode,
    resources: impl IntoIterator<Item = R>,
) -> ClientArgs {
    let mut args = client_args(env, id, restart);
    args.lock = lock;
    args.resources = resources.into_iter().map(Into::into).collect();
    args
}

/// Turns on the clients' quarantine with the TTL as the maximum lock lifetime.
pub fn quarantined(args: &mut ClientArgs) {
    args.quarantine = true;
    args.max_ttl_ms = Some(TTL_MS);
}

/// Starts the proxies (before the clients: they connect through them).
pub async fn prepare(env: &mut Env) -> Result<(), String> {
    env.start_proxies().await
}

fn set_modes(env: &Env, modes: [Mode; crate::env::NODES]) {
    for (proxy, mode) in env.proxies.iter().zip(modes) {
        proxy.set(mode);
    }
}

/// Plays the timeline with the clients already running; returns its windows. The last two windows
/// last half a phase, and at least `min_window` (a scenario whose holders may keep the lock a while
/// must leave others time to get it in every window).
pub async fn play(env: &mut Env, ctx: &Ctx, restart: Restart, min_window: Duration) -> Vec<Window> {
    let p = ctx.phase;
    let ttl = Duration::from_millis(TTL_MS);
    // Long enough for every key a killed node held to expire, and for a frozen node's backlog to be
    // of expired locks only.
    let hold = p.max(ttl * 3 / 2);
    let short = (p / 2).max(min_window);
    let d20 = Delay(Duration::from_millis(20));
    let d80 = Delay(Duration::from_millis(80));
    let mut windows = Vec::new();
    let mut window = |name, from| {
        let to = mark();
        windows.push(Window { name, from, to });
        to
    };

    // Fresh nodes are quarantined for one maximum lifetime (the TTL here) from the clients' start.
    let warm = match restart {
        Restart::AfterTtl => p / 2,
        Restart::AtOnce => p / 2 + ttl + Duration::from_millis(300),
    };
    let start = mark();
    wait(warm).await;
    let t = window("warm", start);

    env.nodes[0].kill9();
    if restart == Restart::AtOnce {
        restart_node(env, 0).await;
    }
    set_modes(env, [Pass, d20, d20, Pass, Pass]);
    wait(hold).await;
    let t = window("node 0 down", t);

    if restart == Restart::AfterTtl {
        restart_node(env, 0).await;
    }
    set_modes(env, [Pass; crate::env::NODES]);
    env.nodes[3].freeze();
    wait(hold).await;
    let t = window("node 3 frozen", t);

    env.nodes[3].thaw();
    set_modes(env, [Pass, d20, Pass, Pass, d80]);
    wait(short).await;
    let t = window("node 4 late", t);

    set_modes(env, [Pass; crate::env::NODES]);
    wait(short).await;
    window("healed", t);
    windows
}

/// [`play`] `cycles` times in a row (every window again, node 0 killed again), for scenarios whose
/// full run should see more of its grants under the faults than the one pass gives.
pub async fn play_cycles(
    env: &mut Env,
    ctx: &Ctx,
    restart: Restart,
    min_window: Duration,
    cycles: usize,
) -> Vec<Window> {
    let mut windows = Vec::new();
    for _ in 0..cycles {
        windows.extend(play(env, ctx, restart, min_window).await);
    }
    windows
}

/// Restarts node `i` (empty, same port) on this thread, stalling the proxies until it answers PING,
/// like the other scenarios. Not on a blocking-pool thread: the node dies with the thread that spawned
/// it (`PR_SET_PDEATHSIG`), and tokio retires idle pool threads after 10 s.
async fn restart_node(env: &mut Env, i: usize) {
    env.nodes[i].restart();
}

/// Adds the grants of each window to the summary line; each window must have some (a majority is
/// usable throughout).
pub fn judge_windows(f: &mut Findings, windows: &[Window]) {
    let counts: Vec<(&str, usize)> = windows
        .iter()
        .map(|w| (w.name, f.logs.grants_within(w.from, w.to).count()))
        .collect();
    let figures: Vec<String> = counts.iter().map(|(n, c)| format!("{n} {c}")).collect();
    f.extra(format!("grants by window: {}", figures.join(", ")));
    for (name, count) in counts {
        f.expect(count > 0, format!("no grant in window `{name}`"));
    }
}
