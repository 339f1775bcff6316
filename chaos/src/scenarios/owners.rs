//! Choreographed owners (scenarios 7, 16 and 17): two in-process holders, A and B, of one resource,
//! whose critical sections the scenario interleaves by hand. Each does the clients' read-modify-write
//! of the counter (so an overlap also loses an update), releases, and logs its grant in
//! `owners.log`, where the checker reads it with the background clients' logs.

use std::collections::BTreeMap;
use std::time::Duration;

use redlock_engine::Redlock;

use crate::clock::{mono_ns, InstantMap};
use crate::counter::{counter_key, Counter};
use crate::env::Env;
use crate::record::{drift_ns, Grant, Log, Outcome, Wrote};
use testkit::RedisNode;

use super::support::{acquire_within, wait, Acquired};

/// The choreography's shared pieces: the resource, its TTL, the log and the storage counter.
pub struct Owners {
    resource: &'static str,
    ttl: Duration,
    map: InstantMap,
    log: Log,
    counter: Counter,
}

/// A holder inside its critical section: it has read the counter.
pub struct Holding {
    holder: &'static str,
    acq: Acquired,
    cs_start: u64,
    read: i64,
}

impl Holding {
    /// Whether the holder's lock says it is still valid (`Lock::is_valid`).
    pub fn is_valid(&self) -> bool {
        self.acq.lock.is_valid()
    }
}

impl Owners {
    /// Owners of `resource` with locks of `ttl`, logging into `env`'s directory.
    pub async fn new(env: &Env, resource: &'static str, ttl: Duration) -> Result<Self, String> {
        let log = Log::create(&env.dir.join("owners.log")).map_err(|e| e.to_string())?;
        let counter = Counter::connect(env.storage.port)
            .await
            .map_err(|e| format!("storage: {e}"))?;
        Ok(Self {
            resource,
            ttl,
            map: InstantMap::new(),
            log,
            counter,
        })
    }

    /// B tries `b` for up to `tries` while A is inside; if granted, B's whole critical section.
    /// Returns whether B got the lock, and how, as the scenario's line says it.
    pub async fn b_tries(
        &mut self,
        b: &Redlock,
        nodes: &[RedisNode],
        tries: Duration,
    ) -> Result<(bool, String), String> {
        match acquire_within(b, self.resource, self.ttl, tries).await {
            Ok(acq) => {
                let by_value = key_owners(nodes, self.resource);
                let held = self.enter("B", acq).await?;
                self.leave(b, held).await?;
                let how = format!("granted (key {} by value: {by_value})", self.resource);
                Ok((true, how))
            }
            Err(e) => Ok((false, format!("refused ({e})"))),
        }
    }

    /// `holder` got the lock: its critical section begins with the counter's read.
    pub async fn enter(&mut self, holder: &'static str, acq: Acquired) -> Result<Holding, String> {
        let cs_start = mono_ns();
        self.log.begin(holder, self.resource, cs_start);
        let read = self
            .counter
            .get(&counter_key(self.resource))
            .await
            .map_err(|e| format!("storage: {e}"))?;
        Ok(Holding {
            holder,
            acq,
            cs_start,
            read,
        })
    }

    /// The rest of the critical section: the clients' 1 ms pause, the write if the lock is still
    /// valid, the release, the grant line.
    pub async fn leave(&mut self, redlock: &Redlock, h: Holding) -> Result<(), String> {
        let Holding {
            holder,
            acq: Acquired { lock, t0, fp, t1 },
            cs_start,
            read,
        } = h;
        wait(Duration::from_millis(1)).await;
        let vu = self.map.to_ns(lock.valid_until());
        let wrote = if lock.is_valid() {
            self.counter
                .set(&counter_key(self.resource), read + 1)
                .await
                .map_err(|e| format!("storage: {e}"))?;
            Wrote::Yes
        } else {
            Wrote::Skipped
        };
        let cs_end = mono_ns();
        let rel_start = mono_ns();
        let rel = Outcome::of(&redlock.release(lock).await);
        let (ttl_ms, drift_ns) = (self.ttl.as_millis() as u64, drift_ns(self.ttl));
        self.log.grant(&Grant {
            t0,
            fp,
            t1,
            vu0: vu,
            vu,
            cs_start,
            cs_end,
            rel_start,
            wrote,
            rel,
            ..Grant::exclusive(holder, self.resource, ttl_ms, drift_ns)
        });
        Ok(())
    }
}

/// Which nodes hold the same value for `resource`'s key, e.g. `{0,3,4} {1,2}` (never the values).
pub fn key_owners(nodes: &[RedisNode], resource: &str) -> String {
    let key = format!("redlock:{{{resource}}}");
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, node) in nodes.iter().enumerate() {
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
