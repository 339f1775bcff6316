//! Small helpers the scenarios share: in-process engines, bounded retry loops, time marks.

use std::time::Duration;

use redlock_engine::{Config, Lock, LockError, Redlock};

use crate::clock::{mono_ns, with_first_poll};
use crate::env::NODE_TIMEOUT_MS;

/// A sleep, spelled for timelines.
pub async fn wait(d: Duration) {
    tokio::time::sleep(d).await;
}

/// Now on `CLOCK_MONOTONIC`, to mark a timeline event.
pub fn mark() -> u64 {
    mono_ns()
}

/// An in-process engine (for scenarios that choreograph two owners): one attempt per call.
pub async fn engine(urls: Vec<String>) -> Result<Redlock, String> {
    engine_with(urls, None).await
}

/// [`engine`], with the crashed-node quarantine on for locks of at most `quarantine` if given.
pub async fn engine_with(
    urls: Vec<String>,
    quarantine: Option<Duration>,
) -> Result<Redlock, String> {
    let defaults = config(urls);
    engine_from(Config {
        quarantine: quarantine.is_some(),
        max_ttl: quarantine.unwrap_or(defaults.max_ttl),
        ..defaults
    })
    .await
}

/// The in-process engines' configuration: one attempt per call, the background clients' node
/// deadline, quarantine off, the library's other defaults (the clock guard on).
pub fn config(urls: Vec<String>) -> Config {
    Config {
        nodes: urls,
        node_timeout: Some(Duration::from_millis(NODE_TIMEOUT_MS)),
        retry_count: 0,
        connect_timeout: Duration::from_secs(1),
        quarantine: false,
        ..Config::default()
    }
}

/// An engine from `config` (see [`config`]).
pub async fn engine_from(config: Config) -> Result<Redlock, String> {
    Redlock::new(config)
        .await
        .map_err(|e| format!("engine: {e}"))
}

/// A successful attempt: the lock; the attempt's start, first-poll end and return (raw monotonic ns).
pub struct Acquired {
    pub lock: Lock,
    pub t0: u64,
    pub fp: u64,
    pub t1: u64,
}

/// `try_acquire` every 20 ms until it succeeds or `within` passes.
pub async fn acquire_within(
    redlock: &Redlock,
    resource: &str,
    ttl: Duration,
    within: Duration,
) -> Result<Acquired, LockError> {
    let until = tokio::time::Instant::now() + within;
    loop {
        let t0 = mono_ns();
        match with_first_poll(redlock.try_acquire(resource.as_bytes(), ttl)).await {
            (Ok(lock), fp) => {
                return Ok(Acquired {
                    lock,
                    t0,
                    fp,
                    t1: mono_ns(),
                })
            }
            (Err(e), _) if tokio::time::Instant::now() >= until => return Err(e),
            (Err(_), _) => wait(Duration::from_millis(20)).await,
        }
    }
}

/// Milliseconds between two marks, signed.
pub fn ms_between(from: u64, to: u64) -> f64 {
    (to as f64 - from as f64) / 1e6
}

/// The most of `spans` (start, end) open at one instant. A span that ends as another begins does
/// not overlap it: a hand-over is not two holds.
pub fn most_at_once(spans: impl IntoIterator<Item = (u64, u64)>) -> usize {
    let mut events: Vec<(u64, i64)> = spans
        .into_iter()
        .flat_map(|(start, end)| [(start, 1), (end, -1)])
        .collect();
    // At equal times the end (-1) sorts first.
    events.sort_unstable();
    let (mut now, mut most) = (0i64, 0i64);
    for (_, step) in events {
        now += step;
        most = most.max(now);
    }
    most as usize
}
