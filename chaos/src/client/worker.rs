//! The acquire loop of the exclusive, many, rw, wait, permit and slot modes: each task picks a
//! resource (a pair for `many`), takes the lock of its [`LockMode`], logs the attempt, and on a grant
//! runs the critical section ([`super::section`]) and logs the grant; then a random pause.

use std::sync::Arc;
use std::time::Duration;

use redlock_engine::{Lock, LockError};

use crate::clock::{mono_ns, with_first_poll, with_polls};
use crate::record::{LockKind, Outcome, Via, RESOURCE_SEPARATOR};

use super::args::LockMode;
use super::ctx::{Ctx, MAX_ROUNDS};
use super::section::{hold, Held};

/// Task `index` of the process, until the stop.
pub async fn run(ctx: Arc<Ctx>, index: usize) -> Result<(), String> {
    let holder = format!("{}.{index}", ctx.args.id);
    let mut counter = ctx.counter().await?;
    let (mut grants, mut from_nodes) = (0u64, 0u64);
    for _ in 0..MAX_ROUNDS {
        if ctx.stopping() {
            break;
        }
        let t0 = mono_ns();
        let Call {
            kind,
            resources,
            result,
            fp,
        } = acquire(&ctx, counter.is_some()).await;
        let t1 = mono_ns();
        ctx.log.attempt(t0, t1, Outcome::of(&result));
        if let Ok(lock) = result {
            grants += 1;
            let label = label(&resources);
            let vu0 = ctx.map.to_ns(lock.valid_until());
            let via = match lock.attempts() {
                0 => {
                    let released = ctx.released_until.lock().map(|m| m.get(&label).copied());
                    match released {
                        Ok(Some(until)) if vu0 > until => Via::HandoffExtended,
                        _ => Via::Handoff,
                    }
                }
                n => Via::Nodes(n),
            };
            if matches!(via, Via::Nodes(_)) {
                from_nodes += 1;
            }
            let linger = index == 0
                && ctx.args.linger_every > 0
                && matches!(via, Via::Nodes(_))
                && from_nodes.is_multiple_of(ctx.args.linger_every);
            let held = Held {
                holder: &holder,
                label,
                resources,
                kind,
                lock,
                times: [t0, fp, t1],
                via,
                nth: grants,
                linger,
            };
            let grant = hold(&ctx, held, counter.as_mut())
                .await
                .map_err(|e| format!("{holder}: storage: {e}"))?;
            ctx.log.grant(&grant);
        }
        let pause = fastrand::u64(..=ctx.args.pause_us);
        tokio::time::sleep(Duration::from_micros(pause)).await;
    }
    Ok(())
}

/// One acquire call.
struct Call {
    kind: LockKind,
    resources: Vec<String>,
    result: Result<Lock, LockError>,
    /// The bound on the engine's start of the winning round (see [`crate::clock::with_polls`]).
    fp: u64,
}

/// One acquire call of the client's [`LockMode`].
async fn acquire(ctx: &Ctx, fenced: bool) -> Call {
    let all = &ctx.args.resources;
    let i = fastrand::usize(..all.len());
    let one = vec![all[i].clone()];
    let (r, ttl) = (all[i].as_bytes(), ctx.ttl);
    match ctx.args.lock {
        LockMode::Exclusive => {
            // Fenced when there is a store to fence: every grant then carries a token.
            let (result, fp) = if fenced {
                with_first_poll(async {
                    let request = ctx.redlock.lock(r).fenced().ttl(ttl).once();
                    request.await.map(redlock_engine::LockGuard::into_lock)
                })
                .await
            } else {
                with_first_poll(ctx.redlock.try_acquire(r, ttl)).await
            };
            Call::new(LockKind::Exclusive, one, result, fp)
        }
        LockMode::Many => {
            let mut pair = vec![all[i].clone(), all[(i + 1) % all.len()].clone()];
            // Either order: the engine must not care (no lock-ordering deadlock, same keys).
            if fastrand::bool() {
                pair.reverse();
            }
            let keys: Vec<&[u8]> = pair.iter().map(|r| r.as_bytes()).collect();
            let (result, polls) = with_polls(ctx.redlock.acquire_many(&keys, ttl)).await;
            Call::new(LockKind::Many, pair, result, polls.before_last)
        }
        LockMode::Rw if fastrand::f64() < ctx.args.write_ratio => {
            let (result, polls) = with_polls(ctx.redlock.acquire_write(r, ttl)).await;
            Call::new(LockKind::Write, one, result, polls.before_last)
        }
        LockMode::Rw => {
            let (result, polls) = with_polls(ctx.redlock.acquire_read(r, ttl)).await;
            Call::new(LockKind::Read, one, result, polls.before_last)
        }
        LockMode::Permit => {
            let k = ctx.args.permits;
            let (result, polls) = with_polls(ctx.redlock.acquire_permit(r, k, ttl)).await;
            Call::new(LockKind::Permit(k), one, result, polls.before_last)
        }
        LockMode::Slot => {
            // Labelled by the semaphore, not the slot it got: the checker counts holders per label.
            let k = ctx.args.permits;
            let (result, polls) = with_polls(ctx.redlock.acquire_slot(r, k, ttl)).await;
            Call::new(LockKind::Slot(k), one, result, polls.before_last)
        }
        // `Renewed`, `Fair`, `Elect` and `Observe` run their own tasks ([`super::renewed`],
        // [`super::fair`], [`super::elect`]); this loop never sees them.
        LockMode::Wait
        | LockMode::Renewed
        | LockMode::Fair
        | LockMode::Elect
        | LockMode::Observe => {
            let (result, polls) = with_polls(ctx.redlock.acquire(r, ttl)).await;
            Call::new(LockKind::Exclusive, one, result, polls.before_last)
        }
    }
}

impl Call {
    fn new(
        kind: LockKind,
        resources: Vec<String>,
        result: Result<Lock, LockError>,
        fp: u64,
    ) -> Self {
        Self {
            kind,
            resources,
            result,
            fp,
        }
    }
}

/// The `resource` field of a grant: its resources, sorted, joined (`m0+m1`).
fn label(resources: &[String]) -> String {
    let mut sorted: Vec<&str> = resources.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.join(&RESOURCE_SEPARATOR.to_string())
}
