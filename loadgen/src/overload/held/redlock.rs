//! held on the redlock engines: `acquire_renewed` with `RenewPolicy::every(--renew-every)`, so the
//! engine's watchdog does every renewal; lost is what `is_lost()` says, sampled each second.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use redlock_engine::{RenewPolicy, RenewedLock, Wait};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::engines::cause;
use crate::machine::loadavg;
use crate::nodes::addr::NodeUrl;
use crate::overload::args::Spec;
use crate::overload::cpu::{process_cpu, server_counters_async};

use super::hold::hold;
use super::record::HeldRecord;

/// One held run (also the election scenario's renewed locks, held beside its elections' cost).
pub struct Held<'a> {
    /// The engine that takes and renews the locks.
    pub engine: redlock_engine::Redlock,
    /// The nodes whose CPU is read.
    pub nodes: &'a [NodeUrl],
    /// TTL, renewal interval, hold time, acquires in flight.
    pub spec: &'a Spec,
    /// Locks held.
    pub count: usize,
    /// Makes the run's keys its own.
    pub tag: String,
}

impl Held<'_> {
    /// Acquires every lock, holds them for `spec.hold_for` (the measured phase), releases them.
    pub async fn run(self, mut r: HeldRecord) -> Result<HeldRecord, String> {
        let spec = self.spec;
        let gate = Arc::new(Semaphore::new(spec.acquire_concurrency));
        let started = Instant::now();
        let mut tasks = JoinSet::new();
        for i in 0..self.count {
            let (engine, gate) = (self.engine.clone(), gate.clone());
            let resource = format!("lg{}:{i}", self.tag).into_bytes();
            let (ttl, policy) = (
                spec.held_ttl,
                RenewPolicy::default().every(spec.renew_every),
            );
            tasks.spawn(async move {
                let _permit = gate.acquire_owned().await;
                engine
                    .lock(&resource)
                    .ttl(ttl)
                    .wait(Wait::Configured)
                    .renewed(policy)
                    .await
            });
        }
        let mut locks: Vec<RenewedLock> = Vec::with_capacity(self.count);
        while let Some(joined) = tasks.join_next().await {
            match joined.map_err(|e| format!("an acquire task failed: {e}"))? {
                Ok(lock) => locks.push(lock),
                Err(e) => {
                    *r.failures
                        .entry(format!("acquire:{}", cause::of(&e)))
                        .or_default() += 1
                }
            }
        }
        r.supported = true;
        r.acquired = Some(locks.len() as u64);
        r.acquire_phase_s = Some(started.elapsed().as_secs_f64());
        // Lost is sticky once the watchdog says so, but `is_lost()` is also true while validity has run
        // out before a late renewal lands; a per-lock flag sampled each second keeps both kinds, at
        // one pass over the locks per second (a watcher task per lock would add its own timer
        // wake-ups to the client CPU being measured).
        let mut ever_lost = vec![false; locks.len()];
        let sample = |locks: &[RenewedLock], ever: &mut [bool]| -> u64 {
            for (seen, lock) in ever.iter_mut().zip(locks) {
                *seen |= lock.is_lost();
            }
            ever.iter().filter(|&&l| l).count() as u64
        };
        r.lost_while_acquiring = Some(sample(&locks, &mut ever_lost));

        let nodes = self.nodes.to_vec();
        let servers_before = server_counters_async(nodes.clone()).await?;
        let renewals_before: u64 = locks.iter().map(|l| u64::from(l.renewals())).sum();
        let cpu_before = process_cpu();
        r.loadavg[0] = loadavg();
        let hold = hold(spec.hold_for, &mut r.lost_timeline, || {
            sample(&locks, &mut ever_lost)
        })
        .await;
        let cpu = process_cpu().saturating_sub(cpu_before);
        // Servers first: a renewal the servers ran but whose reply is not in yet is counted on neither
        // side; the other order would count its EVALSHA without the renewal.
        let servers = server_counters_async(nodes).await?.since(servers_before);
        let renewals = locks.iter().map(|l| u64::from(l.renewals())).sum::<u64>() - renewals_before;
        r.loadavg[1] = loadavg();
        r.lost = Some(sample(&locks, &mut ever_lost));
        r.lost_at_end = Some(locks.iter().filter(|l| l.is_lost()).count() as u64);

        r.record_hold(hold, renewals, locks.len(), spec.renew_every, cpu, servers);

        let failed = self.release_all(locks, &mut r.failures).await?;
        r.failed_releases = Some(failed);
        Ok(r)
    }

    /// Releases every lock, `--acquire-concurrency` at a time; counts the failures by cause.
    async fn release_all(
        &self,
        locks: Vec<RenewedLock>,
        failures: &mut BTreeMap<String, u64>,
    ) -> Result<u64, String> {
        let gate = Arc::new(Semaphore::new(self.spec.acquire_concurrency));
        let mut tasks = JoinSet::new();
        for lock in locks {
            let gate = gate.clone();
            tasks.spawn(async move {
                let _permit = gate.acquire_owned().await;
                lock.release().await
            });
        }
        let mut failed = 0;
        while let Some(joined) = tasks.join_next().await {
            if let Err(e) = joined.map_err(|e| format!("a release task failed: {e}"))? {
                failed += 1;
                *failures
                    .entry(format!("release:{}", cause::of(&e)))
                    .or_default() += 1;
            }
        }
        Ok(failed)
    }
}
