//! held for rslock. rslock has no watchdog, so each lock gets the loop a user of rslock would write: a
//! task that sleeps one interval, then `LockManager::extend`s the lock (one attempt, as every rslock call
//! here), until told to stop. Lost: an extend that failed, or one that succeeded only after the previous
//! validity had ended (the lock was free in between). Same phases and counters as [`super`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rslock::{Lock, LockManager};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

use crate::engines::rslock::RslockClient;
use crate::engines::{LockClient, RetrySpec};
use crate::machine::loadavg;
use crate::nodes::addr::NodeUrl;
use crate::overload::args::Spec;
use crate::overload::cpu::{process_cpu, server_counters_async};
use crate::run::RunContext;

use super::hold::hold;
use super::record::HeldRecord;

/// Shared by the renewal tasks.
#[derive(Debug, Default)]
struct Counts {
    renewals: AtomicU64,
    lost: AtomicU64,
}

/// One held run of `count` rslock locks, filling `r`.
pub async fn run(
    ctx: &RunContext<'_>,
    nodes: &[NodeUrl],
    spec: &Spec,
    count: usize,
    tag: &str,
    mut r: HeldRecord,
) -> Result<HeldRecord, String> {
    let w = ctx.workload;
    let retry = RetrySpec {
        retries: w.retries,
        delay: w.retry_delay,
        jitter: w.retry_jitter,
    };
    let client = Arc::new(
        RslockClient::connect(ctx.urls, spec.held_ttl, retry)
            .await
            .map_err(|e| format!("rslock: {e}"))?,
    );
    let counts = Arc::new(Counts::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let gate = Arc::new(Semaphore::new(spec.acquire_concurrency));
    let started = Instant::now();
    let mut acquiring = JoinSet::new();
    for i in 0..count {
        let (client, gate, counts) = (client.clone(), gate.clone(), counts.clone());
        let stop = stop_rx.clone();
        let resource = format!("lg{tag}:{i}").into_bytes();
        let (ttl, every) = (spec.held_ttl, spec.renew_every);
        acquiring.spawn(async move {
            let permit = gate.acquire_owned().await;
            let lock = client.acquire(&resource).await.result?;
            drop(permit);
            let manager = client.manager().clone();
            // The renewal loop runs in its own task from the moment the lock is won.
            Ok::<_, &'static str>(tokio::spawn(keep(manager, lock, ttl, every, stop, counts)))
        });
    }
    let mut renewing = Vec::with_capacity(count);
    while let Some(joined) = acquiring.join_next().await {
        match joined.map_err(|e| format!("an acquire task failed: {e}"))? {
            Ok(task) => renewing.push(task),
            Err(cause) => *r.failures.entry(format!("acquire:{cause}")).or_default() += 1,
        }
    }
    r.supported = true;
    r.note =
        Some("rslock has no watchdog: one renewal task per lock around LockManager::extend".into());
    r.acquired = Some(renewing.len() as u64);
    r.acquire_phase_s = Some(started.elapsed().as_secs_f64());
    r.lost_while_acquiring = Some(counts.lost.load(Ordering::Relaxed));

    let servers_before = server_counters_async(nodes.to_vec()).await?;
    let renewals_before = counts.renewals.load(Ordering::Relaxed);
    let cpu_before = process_cpu();
    r.loadavg[0] = loadavg();
    let hold = hold(spec.hold_for, &mut r.lost_timeline, || {
        counts.lost.load(Ordering::Relaxed)
    })
    .await;
    let cpu = process_cpu().saturating_sub(cpu_before);
    let servers = server_counters_async(nodes.to_vec())
        .await?
        .since(servers_before);
    let renewals = counts.renewals.load(Ordering::Relaxed) - renewals_before;
    r.loadavg[1] = loadavg();
    let lost = counts.lost.load(Ordering::Relaxed);
    r.lost = Some(lost);
    r.lost_at_end = Some(lost);
    r.record_hold(
        hold,
        renewals,
        renewing.len(),
        spec.renew_every,
        cpu,
        servers,
    );

    // Stop the loops, take the locks back, unlock them (rslock's unlock reports nothing).
    let _ = stop_tx.send(true);
    let mut release = JoinSet::new();
    for task in renewing {
        let (client, gate) = (client.clone(), gate.clone());
        release.spawn(async move {
            if let Ok(Some(lock)) = task.await {
                let _permit = gate.acquire_owned().await;
                client.release(lock).await
            } else {
                Ok(())
            }
        });
    }
    while release.join_next().await.is_some() {}
    r.failed_releases = Some(0);
    Ok(r)
}

/// Renews `lock` every `every` until `stop`; the lock back, or `None` once lost.
async fn keep(
    manager: LockManager,
    mut lock: Lock,
    ttl: Duration,
    every: Duration,
    mut stop: watch::Receiver<bool>,
    counts: Arc<Counts>,
) -> Option<Lock> {
    let mut valid_until = Instant::now() + Duration::from_millis(lock.validity_time as u64);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.changed() => return Some(lock),
        }
        let sent = Instant::now();
        match manager.extend(&lock, ttl).await {
            Ok(renewed) if Instant::now() <= valid_until => {
                counts.renewals.fetch_add(1, Ordering::Relaxed);
                // rslock's validity is counted from the start of the call.
                valid_until = sent + Duration::from_millis(renewed.validity_time as u64);
                lock = renewed;
            }
            // Failed, or renewed too late: someone else could have held it in between.
            _ => {
                counts.lost.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        }
    }
}
