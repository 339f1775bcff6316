//! `chaos client --lock renewed` (scenario 15): many renewed locks held at once in one process, with
//! acquire/release load on the same engine beside them.
//!
//! - **Holders** (`--tasks` of them): each loops `acquire_renewed` (TTL `--ttl-ms`, the default
//!   [`RenewPolicy`]) on a random resource of `--resources`, then holds the lock for 1-3 TTLs — so the
//!   watchdog must renew it several times — while watching `lost()`, then releases it. Each hold is
//!   logged as a grant (`G`, the holding interval the checker tests for overlaps) and as an `R` line
//!   ([`crate::renewal_log`]) with its renewals and whether, and how, it was lost.
//! - **Load** (`--load-tasks`): tight `try_acquire` → `release` cycles on `--load-resources`, through
//!   the **same** engine, so renewals queue for admission (`--max-in-flight`) behind them.
//!
//! A holder relies on its lock until it starts the release, or until it sees the lock lost: then it
//! stops at once, so the grant's interval ends there.
//!
//! These processes run with the engine's local queue off: a lock handed over locally would claim the
//! validity its previous holder's last renewal measured, which the checker's validity bound cannot
//! place without the lock's attempt count, and `RenewedLock` does not expose it. Local contenders
//! then meet on the nodes like remote ones.

use std::sync::Arc;
use std::time::Duration;

use redlock_engine::{RenewPolicy, RenewedLock};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::clock::{mono_ns, with_polls};
use crate::record::{Grant, Outcome, Via};
use crate::renewal_log::{Loss, Renewal};

use super::ctx::{Ctx, MAX_ROUNDS};

/// Starts every holder and load task of the process.
pub fn spawn(ctx: &Arc<Ctx>) -> Vec<JoinHandle<Result<(), String>>> {
    let holders = (0..ctx.args.tasks).map(|i| tokio::spawn(holder(ctx.clone(), i)));
    let load = (0..ctx.args.load_tasks).map(|i| tokio::spawn(load(ctx.clone(), i)));
    holders.chain(load).collect()
}

/// Resolves when the process is told to stop.
async fn stopped(rx: &mut watch::Receiver<bool>) {
    // An error means the sender is gone: the process is ending anyway.
    let _ = rx.wait_for(|stop| *stop).await;
}

async fn holder(ctx: Arc<Ctx>, index: usize) -> Result<(), String> {
    let holder = format!("{}.{index}", ctx.args.id);
    let mut stop = ctx.stop_signal();
    // Spread the first acquires over a TTL: thousands of holders starting in one instant would only
    // measure the start-up burst.
    let spread = Duration::from_millis(fastrand::u64(..=ctx.args.ttl_ms));
    tokio::select! {
        _ = tokio::time::sleep(spread) => {}
        _ = stopped(&mut stop) => return Ok(()),
    }
    for _ in 0..MAX_ROUNDS {
        if *stop.borrow() {
            break;
        }
        let all = &ctx.args.resources;
        let resource = all[fastrand::usize(..all.len())].clone();
        let t0 = mono_ns();
        let call =
            ctx.redlock
                .acquire_renewed(resource.as_bytes(), ctx.ttl, RenewPolicy::default());
        let (result, polls) = with_polls(call).await;
        let t1 = mono_ns();
        ctx.log.attempt(t0, t1, Outcome::of(&result));
        if let Ok(lock) = result {
            let times = [t0, polls.before_last, t1];
            hold(&ctx, &holder, resource, lock, times, &mut stop).await;
        }
        let pause = fastrand::u64(..=ctx.args.pause_us);
        tokio::time::sleep(Duration::from_micros(pause)).await;
    }
    Ok(())
}

/// Holds a renewed lock for 1-3 TTLs (or until it is lost, or the process stops), releases it, logs it.
async fn hold(
    ctx: &Ctx,
    holder: &str,
    resource: String,
    lock: RenewedLock,
    [t0, fp, t1]: [u64; 3],
    stop: &mut watch::Receiver<bool>,
) {
    let vu0 = ctx.map.to_ns(lock.valid_until());
    let work = ctx.ttl.mul_f64(1.0 + 2.0 * fastrand::f64());
    let lost = tokio::select! {
        _ = lock.lost() => true,
        _ = tokio::time::sleep(work) => false,
        _ = stopped(stop) => false,
    };
    let end = mono_ns();
    let vu = ctx.map.to_ns(lock.valid_until());
    // The last renewal started before `valid_until` was read: a bound for the validity-lie check.
    let read_at = mono_ns();
    let renewals = lock.renewals();
    let loss = match (lost, vu <= end) {
        (false, _) => Loss::None,
        (true, true) => Loss::Expired,
        (true, false) => Loss::Refused,
    };
    let rel_start = mono_ns();
    let released = lock.release().await;
    if let Some(e) = released.as_ref().err().filter(|_| !lost && rel_start <= vu) {
        ctx.log.error(holder, "release", mono_ns() - rel_start, e);
    }
    // `RenewedLock` does not say how many attempts it took; with the local queue off (see
    // `crate::client::run`) it always came from the nodes, never handed over: `Via::Nodes(1)`.
    ctx.log.grant(&Grant {
        t0,
        fp,
        t1,
        vu0,
        vu,
        ext_fp: if renewals > 0 { read_at } else { 0 },
        cs_start: t1,
        cs_end: end,
        // A holder that saw the loss stopped relying on the lock right then.
        rel_start: if lost { end } else { rel_start },
        ext: if renewals > 0 {
            Outcome::Ok
        } else {
            Outcome::None
        },
        rel: Outcome::of(&released),
        ..Grant::exclusive(holder, &resource, ctx.args.ttl_ms, ctx.drift_ns)
    });
    ctx.log.write(
        &Renewal {
            holder: holder.to_string(),
            resource,
            t1,
            end,
            vu,
            renewals,
            loss,
        }
        .line(),
    );
}

/// One load task: `try_acquire` → `release` as fast as the engine lets it, logging every attempt.
async fn load(ctx: Arc<Ctx>, index: usize) -> Result<(), String> {
    let holder = format!("{}.l{index}", ctx.args.id);
    let all = &ctx.args.load_resources;
    if all.is_empty() {
        return Err("--load-tasks needs --load-resources".into());
    }
    let stop = ctx.stop_signal();
    for _ in 0..MAX_ROUNDS {
        if *stop.borrow() {
            break;
        }
        let resource = &all[fastrand::usize(..all.len())];
        let t0 = mono_ns();
        let call = ctx.redlock.try_acquire(resource.as_bytes(), ctx.ttl);
        // Not the first poll: past `max_in_flight` the round waits for admission first, and its
        // validity clock starts only when it is let in, in a later poll (see `crate::clock`).
        let (result, polls) = with_polls(call).await;
        let fp = polls.before_last;
        let t1 = mono_ns();
        ctx.log.attempt(t0, t1, Outcome::of(&result));
        match result {
            Ok(lock) => {
                let vu = ctx.map.to_ns(lock.valid_until());
                let attempts = lock.attempts();
                let rel_start = mono_ns();
                let released = ctx.redlock.release(lock).await;
                if let Some(e) = released.as_ref().err().filter(|_| rel_start <= vu) {
                    ctx.log.error(&holder, "release", mono_ns() - rel_start, e);
                }
                ctx.log.grant(&Grant {
                    t0,
                    fp,
                    t1,
                    vu0: vu,
                    vu,
                    cs_start: t1,
                    cs_end: rel_start,
                    rel_start,
                    rel: Outcome::of(&released),
                    via: Via::Nodes(attempts),
                    ..Grant::exclusive(&holder, resource, ctx.args.ttl_ms, ctx.drift_ns)
                });
            }
            // Let the other tasks (and the watchdog) run between back-to-back refusals.
            Err(_) => tokio::task::yield_now().await,
        }
    }
    Ok(())
}
