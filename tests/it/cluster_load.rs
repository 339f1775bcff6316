//! Load on a cluster node set for the failover and resharding tests: workers that take, extend and
//! release locks on a few resources, every grant recorded as the interval it was surely held, and the
//! overlap check over them (two grants of one resource whose intervals cross: a lock granted twice).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redlock_engine::{LockError, Redlock};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// One lock held: from when acquire returned to when release was sent (or validity ended).
#[derive(Debug, Clone)]
pub struct Grant {
    pub resource: String,
    pub from: Instant,
    pub until: Instant,
}

/// What the workers saw.
#[derive(Debug, Default)]
pub struct Outcome {
    pub grants: Vec<Grant>,
    /// Errors other than `Contended`: resource, when, the error.
    pub failures: Vec<(String, Instant, String)>,
    /// Rounds attempted (acquire, extend, release).
    pub ops: usize,
}

impl Outcome {
    /// Every pair of grants of one resource whose intervals cross.
    pub fn overlaps(&self) -> Vec<(Grant, Grant)> {
        let mut by: HashMap<&str, Vec<&Grant>> = HashMap::new();
        for g in &self.grants {
            by.entry(&g.resource).or_default().push(g);
        }
        let mut found = Vec::new();
        for grants in by.values_mut() {
            grants.sort_by_key(|g| g.from);
            for pair in grants.windows(2) {
                if pair[1].from < pair[0].until {
                    found.push((pair[0].clone(), pair[1].clone()));
                }
            }
        }
        found
    }

    /// Grants of `resource` that began after `at`, earliest first.
    pub fn first_grant_after(&self, resources: &[String], at: Instant) -> Option<Instant> {
        self.grants
            .iter()
            .filter(|g| resources.contains(&g.resource) && g.from > at)
            .map(|g| g.from)
            .min()
    }

    /// The longest stretch between `from` and `to` without a grant of any of `resources`.
    pub fn longest_gap(&self, resources: &[String], from: Instant, to: Instant) -> Duration {
        let mut starts: Vec<Instant> = self
            .grants
            .iter()
            .filter(|g| resources.contains(&g.resource) && g.from >= from && g.from <= to)
            .map(|g| g.from)
            .collect();
        starts.sort();
        let mut last = from;
        let mut gap = Duration::ZERO;
        for s in starts.into_iter().chain(std::iter::once(to)) {
            gap = gap.max(s.saturating_duration_since(last));
            last = s;
        }
        gap
    }
}

/// Workers running until [`Load::stop`].
pub struct Load {
    stop: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<Outcome>>,
}

impl Load {
    /// `workers` tasks per engine, each picking resources from `resources` at random; with `extend`,
    /// each lock is extended once before its release.
    pub fn start(
        engines: &[Redlock],
        resources: &[String],
        workers: usize,
        ttl: Duration,
        extend: bool,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for engine in engines {
            for _ in 0..workers {
                let (e, stop, resources) = (engine.clone(), stop.clone(), resources.to_vec());
                tasks.push(tokio::spawn(work(e, stop, resources, ttl, extend)));
            }
        }
        Self { stop, tasks }
    }

    /// Stops the workers and merges what they saw.
    pub async fn stop(self) -> Outcome {
        self.stop.store(true, Ordering::Relaxed);
        let mut all = Outcome::default();
        for task in self.tasks {
            let one = task.await.expect("worker");
            all.grants.extend(one.grants);
            all.failures.extend(one.failures);
            all.ops += one.ops;
        }
        all
    }
}

async fn work(
    e: Redlock,
    stop: Arc<AtomicBool>,
    resources: Vec<String>,
    ttl: Duration,
    extend: bool,
) -> Outcome {
    let mut seen = Outcome::default();
    let fail = |seen: &mut Outcome, r: &str, e: LockError| {
        if !matches!(e, LockError::Contended { .. }) {
            seen.failures
                .push((r.to_string(), Instant::now(), e.to_string()));
        }
    };
    while !stop.load(Ordering::Relaxed) {
        let r = &resources[fastrand::usize(..resources.len())];
        seen.ops += 1;
        let mut lock = match e.try_acquire(r.as_bytes(), ttl).await {
            Ok(lock) => lock,
            Err(err) => {
                fail(&mut seen, r, err);
                tokio::time::sleep(Duration::from_millis(2)).await;
                continue;
            }
        };
        let from = Instant::now();
        tokio::time::sleep(Duration::from_millis(2)).await;
        if extend {
            seen.ops += 1;
            if let Err(err) = e.extend(&mut lock, ttl).await {
                fail(&mut seen, r, err);
            }
        }
        let until = Instant::now().min(lock.valid_until());
        seen.grants.push(Grant {
            resource: r.clone(),
            from,
            until,
        });
        seen.ops += 1;
        if let Err(err) = e.release(lock).await {
            fail(&mut seen, r, err);
        }
    }
    seen
}

/// `n` resource names whose keys (`redlock:{name}`) the cluster puts on member `owner`, or (with
/// `on_owner` false) on any other master.
pub fn resources_on(
    cluster: &testkit::RedisCluster,
    owner: usize,
    on_owner: bool,
    n: usize,
    prefix: &str,
) -> Vec<String> {
    (0..)
        .map(|i| format!("{prefix}-{i}"))
        .filter(|r| (cluster.owner_of(format!("redlock:{{{r}}}").as_bytes()) == owner) == on_owner)
        .take(n)
        .collect()
}
