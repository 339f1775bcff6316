//! `chaos client --lock fair` (scenario 19): each task loops `acquire_fair` on the first of
//! `--resources`, waiting up to `--acquire-timeout-ms`; a granted lock gets the lost-update probe and
//! the release of [`super::section`] (its `G` line: the overlap check covers fair holders too). Every
//! call, granted or not, logs an `F` line ([`crate::fair_log`]) with the rounds the engine ran for it
//! ([`super::round_tap`]), which is what the fairness checker reads.
//!
//! With `--unordered` (the control) a task waits with the plain `acquire` instead, logged the same
//! way: its rounds' `Q` replies are then refusals by a holder, not places in a queue, and waiters of
//! other processes pass each other freely, so the checker must report overtakes.
//!
//! At the stop a waiting call is **cancelled** (its future dropped, which gives its place up) rather
//! than waited for: the checker treats that as giving up, from the moment the cancel was decided.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redlock_engine::LockError;

use crate::clock::{mono_ns, with_polls};
use crate::fair_log::{FairCall, FairEnd};
use crate::record::{LockKind, Outcome, Via};

use super::ctx::{Ctx, MAX_ROUNDS};
use super::round_tap::tapped;
use super::section::{hold, Held};

/// Task `index` of the process, until the stop.
pub async fn run(ctx: Arc<Ctx>, index: usize) -> Result<(), String> {
    let holder = format!("{}.{index}", ctx.args.id);
    let mut counter = ctx.counter().await?;
    let resource = ctx.args.resources[0].clone();
    let nodes = ctx.args.nodes.len() as u32;
    let timeout_ms = ctx.args.acquire_timeout_ms.unwrap_or(0);
    for nth in 1..=MAX_ROUNDS {
        if ctx.stopping() {
            break;
        }
        let rounds = Mutex::new(Vec::new());
        let t0 = mono_ns();
        // The call's future lives in this block only: it is dropped (cancelled) before `rounds` is
        // read, and the cancel's time is taken before that drop.
        let (result, fp, t1) = {
            let acquire: Pin<Box<dyn Future<Output = _> + Send>> = if ctx.args.unordered {
                Box::pin(ctx.redlock.acquire(resource.as_bytes(), ctx.ttl))
            } else {
                Box::pin(ctx.redlock.acquire_fair(resource.as_bytes(), ctx.ttl))
            };
            let call = with_polls(tapped(acquire, &rounds));
            let mut stop = ctx.stop_signal();
            let cancel = async move {
                let _ = stop.wait_for(|s| *s).await;
                mono_ns()
            };
            tokio::select! {
                (result, polls) = call => (Some(result), polls.before_last, mono_ns()),
                at = cancel => (None, 0, at),
            }
        };
        let end = match &result {
            Some(Ok(_)) => FairEnd::Granted,
            Some(Err(LockError::Timeout { .. })) => FairEnd::TimedOut,
            Some(Err(_)) => FairEnd::Failed,
            None => FairEnd::Cancelled,
        };
        let mut attempts = None;
        if let Some(result) = result {
            ctx.log.attempt(t0, t1, Outcome::of(&result));
            if let Ok(lock) = result {
                attempts = Some(lock.attempts());
                let held = Held {
                    holder: &holder,
                    label: resource.clone(),
                    resources: vec![resource.clone()],
                    kind: LockKind::Exclusive,
                    // Only the control's plain `acquire` is ever handed over locally; a fair lock
                    // may be granted by a release of this process's previous holder.
                    via: match lock.attempts() {
                        0 => Via::Handoff,
                        n if ctx.args.unordered => Via::Nodes(n),
                        n => Via::Queue(n),
                    },
                    lock,
                    times: [t0, fp, t1],
                    nth,
                    linger: false,
                };
                let grant = hold(&ctx, held, counter.as_mut())
                    .await
                    .map_err(|e| format!("{holder}: storage: {e}"))?;
                ctx.log.grant(&grant);
            }
        }
        ctx.log.write(
            &FairCall {
                holder: holder.clone(),
                resource: resource.clone(),
                t0,
                t1,
                end,
                nodes,
                timeout_ms,
                attempts,
                rounds: rounds.into_inner().unwrap_or_else(|e| e.into_inner()),
            }
            .line(),
        );
        let pause = fastrand::u64(..=ctx.args.pause_us);
        tokio::time::sleep(Duration::from_micros(pause)).await;
    }
    Ok(())
}
