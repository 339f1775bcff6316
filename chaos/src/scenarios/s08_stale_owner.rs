//! Scenario 8: an owner whose lock is gone calls release and extend after another owner acquired; the
//! new owner's key must be untouched on every node (same value, TTL not lengthened, still there).
//!
//! Two ways to lose a lock, each round:
//! - **expired**: A's TTL ran out. `extend` refuses locally (validity over); `release` reaches the nodes
//!   and must find B's value there.
//! - **vanished**: A's keys were deleted early (as a node clock jump would do) while A's validity still
//!   runs, so both `extend` and `release` reach the nodes and must find B's value.
//!
//! Background clients run throughout on their own resources.

use std::time::Duration;

use redlock_engine::Redlock;

use crate::env::{Ctx, Env};
use crate::record::Outcome;

use super::findings::Findings;
use super::support::{acquire_within, engine, wait};

const A_SHORT_TTL: Duration = Duration::from_millis(300);
const LONG_TTL: Duration = Duration::from_secs(10);
/// A stale extend asks for this: if it ever landed, the key's PTTL would jump above `LONG_TTL`.
const STALE_EXTEND_TTL: Duration = Duration::from_secs(60);
const WITHIN: Duration = Duration::from_secs(3);

#[derive(Default)]
struct Tally {
    stale_calls: usize,
    stale_refused: usize,
    kinds: std::collections::BTreeMap<&'static str, usize>,
    node_checks: usize,
    intact: usize,
    new_owner_release_ok: usize,
}

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    env.spawn_background(super::load::PROCS)?;
    wait(ctx.phase / 2).await;
    let a = engine(env.node_urls()).await?;
    let b = engine(env.node_urls()).await?;
    let rounds = if ctx.short { 3 } else { 25 };
    let mut t = Tally::default();
    for i in 0..rounds {
        let r = format!("s8-expired-{i}");
        round(env, (&a, &b), &r, Loss::Expired, &mut t).await?;
        let r = format!("s8-vanished-{i}");
        round(env, (&a, &b), &r, Loss::Vanished, &mut t).await?;
    }
    wait(ctx.phase / 2).await;
    env.top_up(ctx).await;
    let logs = env.finish().await?;

    let mut f = Findings::new(logs);
    let kinds: Vec<String> = t.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
    f.extra(format!(
        "stale release/extend calls {}, refused {} ({}), new owner's key intact on {} of {} node checks, \
         new owner released {} of {}",
        t.stale_calls,
        t.stale_refused,
        kinds.join(", "),
        t.intact,
        t.node_checks,
        t.new_owner_release_ok,
        2 * rounds
    ));
    f.expect(
        t.stale_refused == t.stale_calls,
        "a stale release or extend succeeded",
    );
    f.expect(t.intact == t.node_checks, "the new owner's key was touched");
    // The new owner's own release is only reported: on this small shared machine a node can miss the
    // 50 ms deadline now and then, which says nothing about the stale calls.
    Ok(f)
}

/// How A loses its lock in a round (see the module doc).
#[derive(Clone, Copy)]
enum Loss {
    Expired,
    Vanished,
}

/// One round on `resource`: A acquires, loses its lock as `loss` says, B acquires; then A extends
/// and releases its stale lock, which must leave B's key as it was on every node; then B releases.
async fn round(
    env: &Env,
    (a, b): (&Redlock, &Redlock),
    resource: &str,
    loss: Loss,
    t: &mut Tally,
) -> Result<(), String> {
    let ttl = match loss {
        Loss::Expired => A_SHORT_TTL,
        Loss::Vanished => LONG_TTL,
    };
    let mut stale = acquire_within(a, resource, ttl, WITHIN)
        .await
        .map_err(|e| format!("A: {e}"))?
        .lock;
    let why = match loss {
        Loss::Expired => {
            wait(A_SHORT_TTL + Duration::from_millis(100)).await;
            "A expired"
        }
        Loss::Vanished => {
            let key = format!("redlock:{{{resource}}}");
            env.on_all_nodes(&[b"DEL", key.as_bytes()]);
            "A's keys vanished"
        }
    };
    let fresh = acquire_within(b, resource, LONG_TTL, WITHIN)
        .await
        .map_err(|e| format!("B after {why}: {e}"))?
        .lock;
    let before = snapshot(env, resource);
    count(
        t,
        Outcome::of(&a.extend(&mut stale, STALE_EXTEND_TTL).await),
    );
    count(t, Outcome::of(&a.release(stale).await));
    check(env, resource, &before, t);
    if b.release(fresh).await.is_ok() {
        t.new_owner_release_ok += 1;
    }
    Ok(())
}

fn count(t: &mut Tally, outcome: Outcome) {
    t.stale_calls += 1;
    if outcome != Outcome::Ok {
        t.stale_refused += 1;
    }
    *t.kinds.entry(outcome.code()).or_default() += 1;
}

/// `(value, PTTL)` of the resource's key on every node.
fn snapshot(env: &Env, resource: &str) -> Vec<(String, i64)> {
    let key = format!("redlock:{{{resource}}}");
    env.nodes
        .iter()
        .map(|n| {
            let value = n.cmd(&[b"GET", key.as_bytes()]);
            let pttl = n.cmd(&[b"PTTL", key.as_bytes()]).parse().unwrap_or(-3);
            (value, pttl)
        })
        .collect()
}

/// Counts the nodes where the new owner's key is as it was: present, same value, PTTL not lengthened.
fn check(env: &Env, resource: &str, before: &[(String, i64)], t: &mut Tally) {
    for ((value, pttl), (was, was_pttl)) in snapshot(env, resource).iter().zip(before) {
        if was == "nil" {
            continue; // a node whose SET from B did not land in time: nothing of B's to protect there
        }
        t.node_checks += 1;
        if value == was && *pttl > 0 && pttl <= was_pttl {
            t.intact += 1;
        }
    }
}
