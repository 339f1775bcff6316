//! Scenario 16: a **node's** wall clock is stepped. Redis expires keys by its wall clock, so
//! a node stepped forward drops every lock key at once while their holders still count its vote.
//! Node 2 runs under the clock shim (`testkit::clock`); the orchestrator steps it. Choreographed,
//! like scenario 7, so the hazard happens every run (the **forward jump**, [`forward_jump`]):
//!
//! 1. nodes 3 and 4 hold someone else's key for the resource while owner A acquires: A holds
//!    {0, 1, 2}; then those keys are deleted;
//! 2. node 2's clock is stepped forward by 10x the TTL: A's key on it expires (checked);
//! 3. owner B, whose engine saw node 2's clock before the step, acquires: nodes 2, 3, 4 are free.
//!
//! The scenario runs that twice, each time beside 4 background client processes (on 16 resources):
//! - **guard off** (`Config::clock_guard = false` in every engine, `--no-clock-guard` in the
//!   clients), on processes of its own (logs in `guard-off/`): B is granted while A still holds a valid
//!   lock, and the checker **must** show the overlap (as in scenario 7; if it does not, the scenario
//!   fails: the checker would be blind);
//! - **guard on** (the default), on the scenario's own processes, judged inside the model (0
//!   overlaps, 0 lost updates): B must be refused, and A's plain lock must stop saying it is valid.
//!   Then nodes 0 and 1 are frozen (SIGSTOP) for a moment, so a grant would need node 2: every client
//!   process must have silenced it (0 grants; attempts refused naming its clock jump).
//!
//! Before the guard-on jump, two windows with nodes 0 and 1 frozen, so that **every** grant needs
//! node 2's vote:
//! - a **slow skew** within the drift bound (node 2's clock 0.8 % fast, then 0.8 % slow; the guard
//!   allows 1 % + 2 ms): every client process keeps being granted, and no attempt is refused naming a
//!   clock jump (no false silencing);
//! - a **backward step** of 10x the TTL: keys on node 2 live longer (liveness only: an unreleased
//!   lock's key is still there after its TTL, checked), and again grants in every process, no
//!   attempt refused naming a clock jump.
//!
//! A and B are created after both windows, so their engines' last readings of node 2 are from after
//! the backward step.

use std::path::Path;
use std::time::Duration;

use redlock_engine::Config;

use crate::checker;
use crate::env::{Ctx, Env};
use crate::record::Outcome;
use testkit::clock::OffsetFile;

use super::findings::Findings;
use super::owners::{key_owners, Owners};
use super::support::{acquire_within, config, engine_from, mark, wait};

/// The scenario's name in the summary and its log directory.
pub const NAME: &str = "16-node-clock-jump";
/// The node under the clock shim (scenario 20 steps it too).
pub(super) const STEPPED: usize = 2;
const RESOURCE: &str = "x16";
/// As scenario 7's: the whole interleaving fits in both validities.
const TTL: Duration = Duration::from_secs(3);
/// Forward and backward steps: every key node 2 holds expires at once (or lives that much longer).
const STEP_MS: i64 = 10 * TTL.as_millis() as i64;
/// Resources of the background clients.
const RESOURCES: usize = 16;
/// How long B keeps trying: without the guard it wins at once.
const B_TRIES: Duration = Duration::from_secs(1);
/// The skew: node 2's clock moves 1 ms more (or less) than ours every 125 ms, 0.8 %.
const SKEW_TICK: Duration = Duration::from_millis(125);
/// The unreleased lock of the backward window (its key must outlive this TTL on node 2).
const CANARY: &str = "k16";
const CANARY_TTL: Duration = Duration::from_millis(1000);

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    let so = ctx.clockshim.clone().map_err(|e| e.why().to_string())?;
    let off = unguarded(ctx, &so).await?;
    let on = guarded(env, ctx, &so).await?;
    env.top_up(ctx).await;
    let mut f = Findings::new(env.finish().await?);
    judge(&mut f, &off, &on);
    Ok(f)
}

/// Marks (raw monotonic ns) of a window of the guard-on timeline.
type Window = (u64, u64);

/// What the guard-on half's timeline saw (its logs are the scenario's).
struct Guarded {
    jump: Jump,
    /// Nodes 0 and 1 frozen: node 2's clock skewed; then stepped back; after the jump.
    skew: Window,
    back: Window,
    silenced: Window,
    /// The unreleased lock of the backward window: whether it was granted, its key's PTTL on node 2
    /// after its TTL, and on how many of nodes 3 and 4 the key still was.
    canary: (bool, i64, usize),
}

/// The guard-on half's timeline, on the scenario's own processes (module docs).
async fn guarded(env: &mut Env, ctx: &Ctx, so: &Path) -> Result<Guarded, String> {
    let offset = put_under_shim(env, so)?;
    spawn_clients(env, true)?;
    // Before the freeze: a fresh engine's connect to a frozen node would wait for its timeout.
    let probe = engine_from(config(env.node_urls())).await?;
    wait(ctx.phase).await;
    let window = ctx.phase.max(Duration::from_secs(2)); // > the canary's TTL + 300 ms
    env.nodes[0].freeze();
    env.nodes[1].freeze();
    let skew = skew(&offset, window).await;
    let back_start = mark();
    // Dropped at once, not released: its keys expire at their TTL, on node 2 by its stepped clock.
    let granted = acquire_within(&probe, CANARY, CANARY_TTL, Duration::from_secs(2))
        .await
        .is_ok();
    offset.step(-STEP_MS);
    wait(window).await;
    let back = (back_start, mark());
    let key = format!("redlock:{{{CANARY}}}");
    let pttl = env.nodes[STEPPED].cmd(&[b"PTTL", key.as_bytes()]);
    let elsewhere = env.nodes[3..]
        .iter()
        .filter(|n| n.cmd(&[b"EXISTS", key.as_bytes()]) == "1")
        .count();
    env.nodes[0].thaw();
    env.nodes[1].thaw();

    let jump = forward_jump(env, &offset, true).await?;
    // Nodes 0 and 1 frozen again: now a grant needs node 2, whose vote every engine must refuse.
    env.nodes[0].freeze();
    env.nodes[1].freeze();
    let silenced_start = mark();
    wait(ctx.phase.min(Duration::from_secs(1))).await;
    let silenced = (silenced_start, mark());
    env.nodes[0].thaw();
    env.nodes[1].thaw();
    wait(ctx.phase).await;
    Ok(Guarded {
        jump,
        skew,
        back,
        silenced,
        canary: (granted, pttl.parse().unwrap_or(-2), elsewhere),
    })
}

/// The scenario's figures and expectations from both halves.
fn judge(f: &mut Findings, off: &Unguarded, on: &Guarded) {
    let refused = |(from, to): Window| {
        let jump = |&&(t0, t1, o): &&(u64, u64, Outcome)| {
            o == Outcome::ClockJump && t0 >= from && t1 <= to
        };
        f.logs.attempts.iter().filter(jump).count()
    };
    let (refused_skew, refused_back) = (refused(on.skew), refused(on.back));
    let refused_silenced = refused(on.silenced);
    let in_skew = grants_by_process(f, on.skew);
    let in_back = grants_by_process(f, on.back);
    let in_silenced = grants_by_process(f, on.silenced);
    let (canary, canary_pttl, canary_elsewhere) = on.canary;
    f.extra(format!(
        "guard off: after node 2's +{} s step B was {}, overlaps {}, lost updates {} (expected; \
         {} grants)",
        STEP_MS / 1000,
        off.jump.b,
        off.overlaps,
        off.lost,
        off.grants
    ));
    f.extra(format!(
        "guard on: B was {} and A's lock said valid: {}; then, nodes 0 and 1 frozen, grants by \
         process {} ({refused_silenced} attempts refused naming node 2's clock jump)",
        on.jump.b,
        on.jump.a_valid,
        join(&in_silenced)
    ));
    f.extra(format!(
        "before the jump, nodes 0 and 1 frozen: grants by process with node 2's clock skewed \
         +-0.8 % {} and after a {} s backward step {} ({} attempts refused naming a clock jump); an \
         unreleased 1 s lock's key then had PTTL {:.1} s on node 2 and was on {canary_elsewhere} of \
         nodes 3-4",
        join(&in_skew),
        -STEP_MS / 1000,
        join(&in_back),
        refused_skew + refused_back,
        canary_pttl as f64 / 1000.0
    ));
    for (half, jump) in [("guard off", &off.jump), ("guard on", &on.jump)] {
        f.expect(
            jump.before == "{0,1,2}",
            format!("{half}: A's key was on {}, not on nodes 0-2", jump.before),
        );
        f.expect(
            jump.after == "{0,1}",
            format!(
                "{half}: the step did not expire A's key on node 2 only (census {}): is the clock \
                 shim working?",
                jump.after
            ),
        );
    }
    f.expect(off.jump.b_granted, "guard off: B was refused");
    f.expect(
        off.overlaps > 0,
        "guard off: no overlap: the checker is blind to a node clock jump",
    );
    f.expect(
        off.validity_lies == 0,
        "guard off: a grant claimed more validity than it measured",
    );
    f.expect(
        off.jump.a_valid,
        "guard off: A's lock did not say valid (nothing should have told it)",
    );
    f.expect(
        !on.jump.b_granted,
        "guard on: B was granted while A held the lock",
    );
    f.expect(
        !on.jump.a_valid,
        "guard on: A's plain lock still said valid although node 2, one of its 3 nodes, jumped",
    );
    f.expect(
        in_silenced.iter().all(|&n| n == 0) && refused_silenced > 0,
        "guard on: a client process still counted node 2's vote after its clock jumped",
    );
    f.expect(
        refused_skew + refused_back == 0,
        "node 2 was silenced for a skew within the drift bound or a backward step",
    );
    f.expect(
        in_skew.iter().chain(&in_back).all(|&n| n > 0),
        "a client process got no grant needing node 2 while its clock skewed or after it stepped \
         back",
    );
    f.expect(
        canary && canary_pttl > CANARY_TTL.as_millis() as i64 && canary_elsewhere == 0,
        "after the backward step the canary's key did not outlive its TTL on node 2 only",
    );
}

/// What the guard-off half showed.
struct Unguarded {
    jump: Jump,
    grants: usize,
    overlaps: usize,
    validity_lies: usize,
    lost: i64,
}

/// The guard-off half, on processes of its own: a fresh [`Env`] in `guard-off/` (the checker reads the
/// scenario's own directory without it).
async fn unguarded(ctx: &Ctx, so: &Path) -> Result<Unguarded, String> {
    let mut env = Env::start(ctx, &format!("{NAME}/guard-off"))?;
    let offset = put_under_shim(&mut env, so)?;
    spawn_clients(&mut env, false)?;
    wait(ctx.phase / 2).await;
    let jump = forward_jump(&env, &offset, false).await?;
    wait(ctx.phase / 2).await;
    let logs = env.finish().await?;
    let s = checker::summarize(&logs);
    let counters = env.counters(&s.completed);
    let lost = s.completed.values().sum::<i64>() - counters.values().sum::<i64>();
    drop(env); // its nodes and clients stop here, before the offset file goes
    Ok(Unguarded {
        jump,
        grants: s.grants,
        overlaps: s.overlaps,
        validity_lies: s.validity_lies,
        lost,
    })
}

/// The background client processes, with the clock guard `guard`, on [`RESOURCES`] resources: with
/// nodes 0 and 1 frozen a grant needs all of nodes 2-4, and on the usual 4 resources 16 contenders
/// then split the votes of one resource for seconds at a time (each attempt's keys, released after
/// it lost, make the next ones lose too).
fn spawn_clients(env: &mut Env, guard: bool) -> Result<(), String> {
    for i in 0..super::load::PROCS {
        let mut args = env.client_args(&format!("c{i}"));
        args.no_clock_guard = !guard;
        args.resources = (0..RESOURCES).map(|r| format!("r{r}")).collect();
        env.spawn(&args, &[])?;
    }
    Ok(())
}

/// Restarts node [`STEPPED`] under the shim `so` (before any client starts), with offset 0.
pub(super) fn put_under_shim(env: &mut Env, so: &Path) -> Result<OffsetFile, String> {
    let offset = OffsetFile::create(env.dir.join("clock-offset"))?;
    env.nodes[STEPPED].restart_as(offset.node_spec(so).tied());
    Ok(offset)
}

/// What the forward jump's choreography saw.
struct Jump {
    /// The key census after A's grant (`{0,1,2}`) and after the step (`{0,1}`).
    before: String,
    after: String,
    b_granted: bool,
    /// B's outcome, for the summary line.
    b: String,
    /// Whether A's lock still said it was valid after B's attempts.
    a_valid: bool,
}

/// Steps 1-3 of the module docs, with every engine's clock guard `guard`.
async fn forward_jump(env: &Env, offset: &OffsetFile, guard: bool) -> Result<Jump, String> {
    let mut owners = Owners::new(env, RESOURCE, TTL).await?;
    let engine = || {
        engine_from(Config {
            clock_guard: guard,
            ..config(env.node_urls())
        })
    };
    let a = engine().await?;
    let b = engine().await?; // B reads node 2's clock as it connects: before the step
    let key = format!("redlock:{{{RESOURCE}}}");
    for node in &env.nodes[3..] {
        node.cmd(&[b"SET", key.as_bytes(), b"someone", b"PX", b"60000"]);
    }
    let acq_a = acquire_within(&a, RESOURCE, TTL, Duration::from_secs(3)).await;
    for node in &env.nodes[3..] {
        node.cmd(&[b"DEL", key.as_bytes()]);
    }
    let acq_a = acq_a.map_err(|e| format!("A could not acquire on nodes 0-2: {e}"))?;
    let held_a = owners.enter("A", acq_a).await?;
    let before = key_owners(&env.nodes, RESOURCE);
    offset.step(STEP_MS); // the fault: node 2's keys, A's among them, expire at once
    let after = key_owners(&env.nodes, RESOURCE);
    let (b_granted, b_outcome) = owners.b_tries(&b, &env.nodes, B_TRIES).await?;
    // With the guard, A's engine has read node 2's clock by now (B tried for a second; an idle
    // connection reads it every 500 ms), so A's plain lock no longer claims to be valid.
    let a_valid = held_a.is_valid();
    // A, which read before B, writes last (if its lock still says valid): B's increment is lost.
    owners.leave(&a, held_a).await?;
    Ok(Jump {
        before,
        after,
        b_granted,
        b: b_outcome,
        a_valid,
    })
}

/// Node 2's clock runs 0.8 % fast for the first half of `window`, 0.8 % slow for the second (back to
/// where it started); the window's marks.
async fn skew(offset: &OffsetFile, window: Duration) -> Window {
    let start = mark();
    let ticks = (window.as_millis() / SKEW_TICK.as_millis()).max(2) as usize;
    for i in 0..ticks {
        wait(SKEW_TICK).await;
        offset.step(if i < ticks / 2 { 1 } else { -1 });
    }
    (start, mark())
}

/// Grants of each background process (`c0`, `c1`, …) whose attempt began and returned in `window`.
fn grants_by_process(f: &Findings, (from, to): Window) -> Vec<usize> {
    (0..super::load::PROCS)
        .map(|i| {
            let prefix = format!("c{i}.");
            f.logs
                .grants
                .iter()
                .filter(|g| g.holder.starts_with(&prefix) && g.t0 >= from && g.t1 <= to)
                .count()
        })
        .collect()
}

fn join(counts: &[usize]) -> String {
    let v: Vec<String> = counts.iter().map(usize::to_string).collect();
    v.join("/")
}
