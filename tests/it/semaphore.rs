//! Counting semaphores on real nodes: never more than K holders with valid permits, under
//! contention, with a node down, a node frozen, and nodes restarted without data (with and without
//! quarantine); the quorum `floor(K·N/(K+1)) + 1` on every subset of nodes down; permits as locks
//! (extend, renewal, `with_permit`, expiry of a dead holder's permit); bad input.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{attempt, dead_url, engine, nodes, transports, urls, RedisNode};
use redlock_engine::{Config, LockError, NodeError, Redlock, RenewPolicy, Transport, MAX_PERMITS};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(5);

fn zcard(node: &RedisNode, resource: &str) -> usize {
    let key = format!("redlock:{{{resource}}}:sem");
    node.cmd(&[b"ZCARD", key.as_bytes()]).parse().unwrap()
}

#[tokio::test]
async fn k_permits_are_granted_the_next_is_refused_and_a_release_lets_it_in() {
    let cluster = nodes(5);
    for transport in transports() {
        let e = engine(urls(&cluster), transport).await;
        let res = format!("basic-{transport:?}");
        let a = attempt(e.lock(&res).permits(2), TTL).await.unwrap();
        let mut b = attempt(e.lock(&res).permits(2), TTL).await.unwrap();
        assert!(a.is_valid() && a.remaining() <= TTL);
        let err = attempt(e.lock(&res).permits(2), TTL).await.unwrap_err();
        assert!(matches!(err, LockError::Contended { .. }), "{err:?}");
        // The refused attempt left nothing behind on any node.
        assert!(
            crate::common::eventually(Duration::from_secs(1), || cluster
                .iter()
                .all(|n| zcard(n, &res) == 2))
            .await
        );
        e.extend(&mut b, Duration::from_secs(10)).await.unwrap();
        assert!(b.remaining() > TTL);
        e.release(a).await.unwrap();
        let c = attempt(e.lock(&res).permits(2), TTL).await.unwrap();
        e.release(b).await.unwrap();
        e.release(c).await.unwrap();
        // The last permit out removes the marker: the resource is free for any count, and as a lock.
        assert!(cluster
            .iter()
            .all(|n| !n.exists(format!("redlock:{{{res}}}").as_bytes())));
        let lock = e.try_acquire(&res, TTL).await.unwrap();
        e.release(lock).await.unwrap();
    }
}

#[tokio::test]
async fn bad_counts_are_refused_and_callers_that_disagree_on_k_are_detected() {
    let cluster = nodes(3);
    let e = engine(urls(&cluster), Transport::Pipeline).await;
    for bad in [0, MAX_PERMITS + 1, u32::MAX] {
        let err = attempt(e.lock("k").permits(bad), TTL).await.unwrap_err();
        assert!(matches!(err, LockError::InvalidInput(_)), "{bad}: {err:?}");
        let err = e.acquire_permit("k", bad, TTL).await.unwrap_err();
        assert!(matches!(err, LockError::InvalidInput(_)), "{bad}: {err:?}");
    }
    let held = e.acquire_permit("k", 2, TTL).await.unwrap();
    let started = std::time::Instant::now();
    let err = e.acquire_permit("k", 3, TTL).await.unwrap_err();
    assert!(
        matches!(
            err,
            LockError::PermitsMismatch {
                permits: 3,
                found: 2
            }
        ),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "refused at once, not retried"
    );
    assert!(!err.to_string().is_empty());
    // Another kind of lock on the resource is refused both ways.
    assert!(
        e.try_acquire("k", TTL).await.is_err(),
        "no lock over permits"
    );
    let lock = e.try_acquire("x", TTL).await.unwrap();
    let err = attempt(e.lock("x").permits(2), TTL).await.unwrap_err();
    assert!(matches!(err, LockError::Contended { .. }), "{err:?}");
    e.release(lock).await.unwrap();
    // Once the last permit is gone, a new count is fine.
    e.release(held).await.unwrap();
    let p = attempt(e.lock("k").permits(3), TTL).await.unwrap();
    e.release(p).await.unwrap();
    // A resource name that is not usable is InvalidInput, as for every kind.
    assert!(matches!(
        attempt(e.lock("").permits(2), TTL).await,
        Err(LockError::InvalidInput(_))
    ));
    assert!(matches!(
        attempt(e.lock("k").permits(2), Duration::ZERO).await,
        Err(LockError::InvalidInput(_))
    ));
}

#[tokio::test]
async fn granted_iff_the_permit_quorum_is_up_on_every_subset_of_five() {
    let cluster = nodes(5);
    let dead: Vec<String> = (0..5).map(|_| dead_url()).collect();
    for (k, needed) in [(1u32, 3usize), (2, 4), (4, 5)] {
        for mask in 0u32..32 {
            let urls: Vec<String> = (0..5)
                .map(|i| {
                    if mask & (1 << i) == 0 {
                        cluster[i].url()
                    } else {
                        dead[i].clone()
                    }
                })
                .collect();
            let e = engine(urls, Transport::Pipeline).await;
            let up = 5 - mask.count_ones() as usize;
            let res = format!("subset-{k}-{mask}");
            match attempt(e.lock(&res).permits(k), TTL).await {
                Ok(p) => {
                    assert!(up >= needed, "K={k} mask {mask:05b}: granted with {up} up");
                    e.release(p).await.unwrap();
                }
                Err(err) => {
                    assert!(
                        up < needed,
                        "K={k} mask {mask:05b}: refused with {up} up: {err}"
                    );
                    assert!(
                        matches!(err, LockError::QuorumNotReached { needed: n, .. } if n == needed),
                        "{err:?}"
                    );
                }
            }
            let clean = crate::common::eventually(Duration::from_secs(1), || {
                (0..5)
                    .filter(|i| mask & (1 << i) == 0)
                    .all(|i| zcard(&cluster[i], &res) == 0)
            })
            .await;
            assert!(clean, "K={k} mask {mask:05b}: a permit left behind");
        }
    }
}

/// Every spread of two K = 2 holders over four nodes each (the quorum), placed by hand on the nodes:
/// a third is always refused. (A majority would not do: `tests/it/semaphore_quorum.rs` finds the spread
/// of three holders on three nodes each that fits.)
#[tokio::test]
async fn a_third_holder_is_refused_on_every_spread_of_two() {
    let cluster = nodes(5);
    let e = engine(urls(&cluster), Transport::Pipeline).await;
    let fours: Vec<u32> = (0u32..32).filter(|m| m.count_ones() == 4).collect();
    let far = "99999999999999";
    for (i, &a) in fours.iter().enumerate() {
        for &b in &fours[i..] {
            let res = format!("spread-{a:05b}-{b:05b}");
            let (marker, set) = (
                format!("redlock:{{{res}}}"),
                format!("redlock:{{{res}}}:sem"),
            );
            for (holder, on) in [("a", a), ("b", b)] {
                for n in (0..5).filter(|n| on & (1 << n) != 0) {
                    let node = &cluster[n];
                    node.cmd(&[b"SET", marker.as_bytes(), b"permits:2", b"PX", b"60000"]);
                    node.cmd(&[b"ZADD", set.as_bytes(), far.as_bytes(), holder.as_bytes()]);
                    node.cmd(&[b"PEXPIRE", set.as_bytes(), b"60000"]);
                }
            }
            let err = attempt(e.lock(&res).permits(2), TTL).await.unwrap_err();
            assert!(
                matches!(err, LockError::Contended { .. }),
                "{a:05b} {b:05b}: {err:?}"
            );
        }
    }
}

/// Grant intervals `[granted, min(valid_until, released)]` of every holder, for the overlap check.
type Intervals = Arc<Mutex<Vec<(Instant, Instant)>>>;

/// `workers` tasks over `engines`, each taking a permit of K, holding it ~2 ms, releasing, for `run`.
async fn contend(
    engines: &[Redlock],
    k: u32,
    workers: usize,
    run: Duration,
    res: &str,
) -> Intervals {
    contend_on(engines, k, workers, run, res, false).await
}

/// [`contend`] with the counting semaphore, or (`slots`) with the slot semaphore.
async fn contend_on(
    engines: &[Redlock],
    k: u32,
    workers: usize,
    run: Duration,
    res: &str,
    slots: bool,
) -> Intervals {
    let intervals: Intervals = Arc::default();
    let stop = Instant::now() + run;
    let mut tasks = Vec::new();
    for w in 0..workers {
        let e = engines[w % engines.len()].clone();
        let (res, intervals) = (res.to_string(), intervals.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < stop {
                let ttl = Duration::from_millis(500);
                let got = if slots {
                    e.acquire_slot(&res, k, ttl).await
                } else {
                    e.acquire_permit(&res, k, ttl).await
                };
                match got {
                    Ok(p) => {
                        let granted = Instant::now();
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        let end = Instant::now().min(p.valid_until());
                        intervals.lock().unwrap().push((granted, end));
                        let _ = e.release(p).await;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    intervals
}

/// The most intervals covering one instant.
fn max_overlap(intervals: &Intervals) -> usize {
    let mut events: Vec<(Instant, i32)> = Vec::new();
    for &(a, b) in intervals.lock().unwrap().iter() {
        events.push((a, 1));
        events.push((b, -1));
    }
    // Ends before starts at the same instant: touching intervals do not overlap.
    events.sort_by_key(|&(t, d)| (t, d));
    let (mut now, mut max) = (0i32, 0i32);
    for (_, d) in events {
        now += d;
        max = max.max(now);
    }
    max as usize
}

async fn engines(urls: Vec<String>, count: usize) -> Vec<Redlock> {
    let mut out = Vec::new();
    for _ in 0..count {
        out.push(
            crate::common::builder()
                .nodes(urls.clone())
                .retry(1000, Duration::from_millis(1), Duration::from_millis(3))
                .build()
                .await
                .unwrap(),
        );
    }
    out
}

#[tokio::test]
async fn never_more_than_k_holders_under_contention_healthy_and_with_a_node_down() {
    let cluster = nodes(5);
    let mut with_dead = urls(&cluster);
    with_dead[2] = dead_url();
    for (label, list) in [("healthy", urls(&cluster)), ("node-down", with_dead)] {
        let es = engines(list, 3).await;
        let grants = contend(&es, 3, 12, Duration::from_secs(2), label).await;
        let count = grants.lock().unwrap().len();
        let max = max_overlap(&grants);
        assert!(max <= 3, "{label}: {max} holders at once");
        assert!(count > 50, "{label}: only {count} grants");
        assert!(max >= 2, "{label}: the test must see sharing (max {max})");
    }
}

#[tokio::test]
async fn never_more_than_k_holders_with_a_node_frozen() {
    let cluster = nodes(5);
    let es = engines(urls(&cluster), 3).await;
    let frozen_for = Duration::from_millis(1200);
    let contention = {
        let es = es.clone();
        tokio::spawn(async move { contend(&es, 2, 8, Duration::from_secs(3), "frozen").await })
    };
    // The probe is an engine of its own: the contenders' engines are at their local gate's limit.
    let probe = engines(urls(&cluster), 1).await.remove(0);
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster[4].freeze();
    // While it is frozen, a permit is granted within the node deadline and a margin.
    let started = Instant::now();
    let mut granted = None;
    while started.elapsed() < frozen_for {
        let t = Instant::now();
        if let Ok(p) = attempt(probe.lock("frozen").permits(2), Duration::from_millis(500)).await {
            granted = Some(t.elapsed());
            let _ = probe.release(p).await;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(frozen_for.saturating_sub(started.elapsed())).await;
    cluster[4].thaw();
    let grants = contention.await.unwrap();
    let attempt = granted.expect("granted by the four others while one is frozen");
    assert!(
        attempt < Duration::from_millis(200),
        "attempt took {attempt:?}"
    );
    assert!(
        max_overlap(&grants) <= 2,
        "{} holders",
        max_overlap(&grants)
    );
    assert!(grants.lock().unwrap().len() > 20);
}

/// The lifetime quarantine waits out in the restart tests (uptime is reported in whole seconds).
const MAX_LIFETIME: Duration = Duration::from_secs(2);

async fn q_engine(nodes: Vec<String>, quarantine: bool) -> Redlock {
    Redlock::new(Config {
        nodes,
        quarantine,
        max_ttl: MAX_LIFETIME,
        retry_count: 0,
        connect_timeout: Duration::from_millis(500),
        ..Default::default()
    })
    .await
    .unwrap()
}

/// K = 2, N = 5 (q = 4). A holds {0, 1, 2, 3} (its engine cannot reach node 4), B {0, 1, 2, 4}. Nodes 0
/// and 1 then restart at once without data: C finds room on {0, 1, 3, 4} — a third valid holder,
/// unless restarted nodes are quarantined. Returns how many of A, B, C held valid permits at once.
async fn restart_scenario(quarantine: bool) -> usize {
    let mut cluster = nodes(5);
    tokio::time::sleep(MAX_LIFETIME + Duration::from_millis(1100)).await; // old enough to vote
    let ttl = Duration::from_millis(1800);
    let mut a_urls = urls(&cluster);
    a_urls[4] = dead_url();
    let mut b_urls = urls(&cluster);
    b_urls[3] = dead_url();
    let a = q_engine(a_urls, quarantine).await;
    let b = q_engine(b_urls, quarantine).await;
    let pa = a
        .acquire_permit("restart", 2, ttl)
        .await
        .expect("A on {0,1,2,3}");
    let pb = b
        .acquire_permit("restart", 2, ttl)
        .await
        .expect("B on {0,1,2,4}");
    cluster[0].kill9();
    cluster[1].kill9();
    cluster[0].restart();
    cluster[1].restart();
    let c = q_engine(urls(&cluster), quarantine).await;
    let mut holders = 2;
    match c.acquire_permit("restart", 2, ttl).await {
        Ok(pc) => {
            if pa.is_valid() && pb.is_valid() && pc.is_valid() {
                holders = 3;
            }
            let _ = c.release(pc).await;
        }
        Err(err) => {
            if quarantine {
                assert!(
                    matches!(&err, LockError::QuorumNotReached { failures, .. }
                        if failures.iter().any(|(_, e)| *e == NodeError::Quarantined)),
                    "{err:?}"
                );
            }
        }
    }
    let _ = a.release(pa).await;
    let _ = b.release(pb).await;
    holders
}

#[tokio::test]
async fn a_restart_without_data_gives_k_plus_one_holders_without_quarantine() {
    assert_eq!(restart_scenario(false).await, 3, "the fault must be real");
}

#[tokio::test]
async fn quarantine_keeps_it_at_k() {
    assert_eq!(restart_scenario(true).await, 2);
}

#[tokio::test]
async fn permits_renew_run_scoped_and_a_dead_holders_permit_expires() {
    let cluster = nodes(3);
    let e = engine(urls(&cluster), Transport::Pipeline).await;
    let ttl = Duration::from_millis(600);
    // Renewed past several TTLs (600 ms: a node deadline of 30 ms, which a loaded machine still meets).
    let p = e.acquire_permit("renew", 1, ttl).await.unwrap();
    let renewed = e.renew(p, RenewPolicy::default()).unwrap();
    tokio::time::sleep(Duration::from_millis(1400)).await;
    assert!(!renewed.is_lost() && renewed.renewals() >= 2);
    assert!(
        attempt(e.lock("renew").permits(1), ttl).await.is_err(),
        "still held"
    );
    renewed.release().await.unwrap();
    // Scoped use returns the work's value and releases.
    let out = e
        .with_permit("scoped", 2, ttl, |ctx| async move {
            tokio::time::sleep(Duration::from_millis(1400)).await;
            assert!(!ctx.is_lost());
            7
        })
        .await
        .unwrap();
    assert_eq!(out, 7);
    assert!(cluster.iter().all(|n| zcard(n, "scoped") == 0));
    // A renewed permit whose entries vanish on a majority is reported lost.
    let lost = e
        .with_permit("vanish", 2, ttl, |ctx| {
            let cluster = &cluster;
            async move {
                for n in &cluster[..2] {
                    n.cmd(&[b"DEL", b"redlock:{vanish}:sem"]);
                }
                ctx.lost().await;
            }
        })
        .await;
    assert!(matches!(lost, Err(LockError::Lost)), "{lost:?}");
    // A holder that dies (never releases) frees its permit at its TTL.
    std::mem::forget(e.acquire_permit("dead", 1, ttl).await.unwrap());
    assert!(attempt(e.lock("dead").permits(1), ttl).await.is_err());
    tokio::time::sleep(ttl + Duration::from_millis(50)).await;
    let p = attempt(e.lock("dead").permits(1), ttl)
        .await
        .expect("the dead holder's permit expired");
    // Release after expiry says so.
    tokio::time::sleep(ttl + Duration::from_millis(50)).await;
    assert!(matches!(e.release(p).await, Err(LockError::AlreadyExpired)));
}

#[tokio::test]
async fn slot_semaphores_keep_k_with_a_majority_and_refuse_bad_counts() {
    let cluster = nodes(5);
    let e = engine(urls(&cluster), Transport::Pipeline).await;
    let a = attempt(e.lock("slots").slots(2), TTL).await.unwrap();
    let b = attempt(e.lock("slots").slots(2), TTL).await.unwrap();
    assert_ne!(a.resource(), b.resource());
    assert!(a.resource().starts_with(b"{slots}:slot:"));
    let err = attempt(e.lock("slots").slots(2), TTL).await.unwrap_err();
    assert!(matches!(err, LockError::Contended { .. }), "{err:?}");
    e.release(a).await.unwrap();
    let c = e.acquire_slot("slots", 2, TTL).await.unwrap();
    e.release(b).await.unwrap();
    e.release(c).await.unwrap();
    for bad in [0, 65] {
        assert!(matches!(
            attempt(e.lock("slots").slots(bad), TTL).await,
            Err(LockError::InvalidInput(_))
        ));
    }
    // K = 4 with two of five nodes down: the counting semaphore needs all five, a slot a majority.
    let mut list = urls(&cluster);
    list[0] = dead_url();
    list[1] = dead_url();
    let half = engine(list, Transport::Pipeline).await;
    assert!(attempt(half.lock("avail").permits(4), TTL).await.is_err());
    let slot = attempt(half.lock("avail").slots(4), TTL).await.unwrap();
    half.release(slot).await.unwrap();
    // Never more than K under contention.
    let es = engines(urls(&cluster), 3).await;
    let grants = contend_on(&es, 3, 12, Duration::from_secs(2), "slot-contend", true).await;
    let max = max_overlap(&grants);
    assert!((2..=3).contains(&max), "{max} slot holders at once");
}
