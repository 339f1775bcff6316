//! Scenario 7: a node restarted at once, without persistence, while it holds part of a lock. This is
//! outside Redlock's model (restarts must be delayed by the TTL, or keys persisted), so the checker must
//! show the overlap — proof that it is not blind. Choreographed, so it happens every run:
//!
//! 1. nodes 3 and 4 are down while owner A acquires: A holds nodes {0, 1, 2};
//! 2. nodes 3 and 4 come back empty and node 0 is killed and restarted at once, empty;
//! 3. owner B acquires: nodes 0, 3, 4 are free, a majority — B holds {0, 3, 4} while A still holds a
//!    valid lock. Both do their read-modify-write of the counter: one increment is lost.
//!
//! Background clients run throughout (and may overlap too). With `--expect-quarantine` every engine of
//! the scenario turns on the crashed-node quarantine (`Config::quarantine`, with the TTL as the
//! maximum lock lifetime): restarted nodes do not vote, B must be refused, and the scenario expects no
//! overlap and no lost update instead.

use std::collections::BTreeMap;
use std::time::Duration;

use redlock_engine::Redlock;

use crate::clock::{mono_ns, InstantMap};
use crate::counter::Counter;
use crate::env::{Ctx, Env};
use crate::record::{Fenced, Grant, LockKind, Log, Outcome, Seen, Via, Wrote};

use super::support::{acquire_within, engine_with, wait, Acquired};
use super::Findings;

const RESOURCE: &str = "x7";
/// Long enough for the whole interleaving to happen inside both validities; short enough that, with the
/// quarantine, the freshly started nodes become old enough to vote without a long wait.
const TTL: Duration = Duration::from_secs(3);
/// How long B keeps trying: in the model-breaking case it wins at once.
const B_TRIES: Duration = Duration::from_secs(1);

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    let quarantine = ctx.expect_quarantine.then_some(TTL);
    for i in 0..super::s01_contention::PROCS {
        let mut args = env.client_args(&format!("c{i}"));
        args.quarantine = ctx.expect_quarantine;
        env.spawn(&args, &[])?;
    }
    // With the quarantine, every node must first be up for longer than the TTL (uptime is in seconds).
    let settle = if ctx.expect_quarantine {
        TTL + Duration::from_millis(1500)
    } else {
        Duration::ZERO
    };
    wait(ctx.phase.max(settle)).await;
    let log = Log::create(&env.dir.join("owners.log")).map_err(|e| e.to_string())?;
    let map = InstantMap::new();
    let key = crate::counter::counter_key(RESOURCE);
    let io = |e: std::io::Error| format!("storage: {e}");
    let mut counter = Counter::connect(env.storage.port).await.map_err(io)?;

    let a = engine_with(env.node_urls(), quarantine).await?;
    env.nodes[3].kill9();
    env.nodes[4].kill9();
    let acq_a = acquire_within(&a, RESOURCE, TTL, Duration::from_secs(3))
        .await
        .map_err(|e| format!("A could not acquire on nodes 0-2: {e}"))?;
    let cs_a = mono_ns();
    log.begin("A", RESOURCE, cs_a);
    let read_a = counter.get(&key).await.map_err(io)?;

    env.nodes[3].restart();
    env.nodes[4].restart();
    env.nodes[0].restart(); // the fault: instantly back, empty, A's key forgotten

    let b = engine_with(env.node_urls(), quarantine).await?;
    let acq_b = acquire_within(&b, RESOURCE, TTL, B_TRIES).await;
    let b_outcome = match acq_b {
        Ok(acq) => {
            let owners = key_owners(env);
            let cs_b = mono_ns();
            let read_b = counter.get(&key).await.map_err(io)?;
            wait(Duration::from_millis(1)).await;
            let g = finish(&b, &map, "B", acq, cs_b, &mut counter, read_b).await?;
            log.grant(&g);
            format!("granted (key {RESOURCE} by value: {owners})")
        }
        Err(e) => format!("refused ({e})"),
    };
    // A, which read before B, writes last: B's increment is overwritten.
    let g = finish(&a, &map, "A", acq_a, cs_a, &mut counter, read_a).await?;
    log.grant(&g);

    wait(ctx.phase).await;
    env.top_up(ctx).await;
    let logs = env.finish().await?;
    let mut f = Findings::new(logs);
    f.extra(format!(
        "A held nodes 0-2; after node 0's instant restart B was {b_outcome}"
    ));
    Ok(f)
}

/// The rest of a choreographed owner's critical section: write if still valid, release, the grant.
async fn finish(
    redlock: &Redlock,
    map: &InstantMap,
    holder: &str,
    acq: Acquired,
    cs_start: u64,
    counter: &mut Counter,
    read: i64,
) -> Result<Grant, String> {
    let Acquired { lock, t0, fp, t1 } = acq;
    let key = crate::counter::counter_key(RESOURCE);
    let vu = map.to_ns(lock.valid_until());
    let wrote = if lock.is_valid() {
        counter
            .set(&key, read + 1)
            .await
            .map_err(|e| format!("storage: {e}"))?;
        Wrote::Yes
    } else {
        Wrote::Skipped
    };
    let cs_end = mono_ns();
    let rel_start = mono_ns();
    let rel = Outcome::of(&redlock.release(lock).await);
    Ok(Grant {
        holder: holder.to_string(),
        resource: RESOURCE.to_string(),
        ttl_ms: TTL.as_millis() as u64,
        drift_ns: (TTL.mul_f64(redlock_engine::Config::default().drift_factor)
            + Duration::from_millis(2))
        .as_nanos() as u64,
        t0,
        fp,
        t1,
        vu0: vu,
        vu,
        ext_fp: 0,
        cs_start,
        cs_end,
        rel_start,
        wrote,
        ext: Outcome::None,
        rel,
        token: None,
        fenced: Fenced::None,
        kind: LockKind::Exclusive,
        via: Via::Nodes(1),
        seen: Seen::None,
    })
}

/// Which nodes hold the same value for the resource's key, e.g. `{0,3,4} {1,2}`.
fn key_owners(env: &Env) -> String {
    let key = format!("redlock:{{{RESOURCE}}}");
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, node) in env.nodes.iter().enumerate() {
        let value = node.try_cmd(&[b"GET", key.as_bytes()]).unwrap_or_default();
        if value != "nil" && !value.is_empty() {
            groups.entry(value).or_default().push(i);
        }
    }
    let mut sets: Vec<String> = groups
        .into_values()
        .map(|v| {
            let ids: Vec<String> = v.iter().map(usize::to_string).collect();
            format!("{{{}}}", ids.join(","))
        })
        .collect();
    sets.sort();
    sets.join(" ")
}
