//! Watchdog renewal, scoped locks and reentrant owners, against real nodes (one down, one frozen).

use std::time::Duration;

use crate::common::{each_transport, engine, nodes, quick_nodes, retrying, urls};
use redlock_engine::{LockError, RenewPolicy};

const TTL: Duration = Duration::from_millis(300);

#[tokio::test]
async fn a_renewed_lock_outlives_its_ttl_until_released() {
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |_transport, [e, other]| {
        let lock = e
            .acquire_renewed(b"long-job", TTL, RenewPolicy::default())
            .await
            .unwrap();
        tokio::time::sleep(TTL * 4).await;
        assert!(!lock.is_lost());
        assert!(
            lock.renewals() >= 8,
            "renewed every TTL/3: {}",
            lock.renewals()
        );
        assert!(
            other.try_acquire(b"long-job", TTL).await.is_err(),
            "still held after 4 TTLs"
        );
        lock.release().await.unwrap();
        let free = other.try_acquire(b"long-job", TTL).await.unwrap();
        other.release(free).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn many_locks_renew_together_and_a_frozen_node_does_not_lose_them() {
    let (cluster, [e]) = quick_nodes(3).await;
    let mut locks = Vec::new();
    for i in 0..50 {
        let resource = format!("batch-{i}");
        locks.push(
            e.acquire_renewed(resource.as_bytes(), TTL, RenewPolicy::default())
                .await
                .unwrap(),
        );
    }
    cluster[1].freeze();
    tokio::time::sleep(TTL * 3).await;
    cluster[1].thaw();
    for lock in &locks {
        assert!(
            !lock.is_lost(),
            "a frozen minority must not lose renewed locks"
        );
        assert!(lock.renewals() >= 5, "{}", lock.renewals());
    }
    for lock in locks {
        lock.release().await.unwrap();
    }
}

#[tokio::test]
async fn coalesced_renewals_answer_for_each_lock_on_its_own() {
    // Many locks renewing at once share one extend call per node; each must still get its own
    // verdict. Node 1 loses every key, so every lock lives on nodes 0 and 2 alone: lock 11 meets a
    // key of another type on node 0 (if that failed the whole call there, every lock in its batch
    // would be lost), lock 7 someone else's value on node 2. Exactly those two are lost.
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |transport, [e]| {
        let ttl = Duration::from_millis(900);
        let policy = RenewPolicy::default().every(Duration::from_millis(150));
        let mut locks = Vec::new();
        for i in 0..120 {
            let resource = format!("coalesce-{i}");
            let lock = e.acquire_renewed(resource.as_bytes(), ttl, policy.clone());
            locks.push(lock.await.unwrap());
        }
        let calls_before = evalsha_calls(&cluster[0]);
        tokio::time::sleep(Duration::from_millis(400)).await;
        let renewals: u32 = locks.iter().map(|l| l.renewals()).sum();
        let calls = evalsha_calls(&cluster[0]) - calls_before;
        // Without coalescing every renewal is its own call (measured: 254 renewals, 254 calls); with
        // it, 3.8-6 per call here depending on how the renewals' starts spread.
        assert!(
            u64::from(renewals) > 2 * calls,
            "{renewals} renewals took {calls} script calls on one node: not coalesced"
        );
        for i in 0..120 {
            cluster[1].cmd(&[b"DEL", format!("redlock:{{coalesce-{i}}}").as_bytes()]);
        }
        let odd = b"redlock:{coalesce-11}";
        cluster[0].cmd(&[b"DEL", odd]);
        cluster[0].cmd(&[b"HSET", odd, b"f", b"v"]);
        cluster[2].cmd(&[
            b"SET",
            b"redlock:{coalesce-7}",
            b"intruder",
            b"PX",
            b"10000",
        ]);
        tokio::time::sleep(Duration::from_millis(600)).await;
        for (i, lock) in locks.iter().enumerate() {
            assert_eq!(
                lock.is_lost(),
                i == 7 || i == 11,
                "lock {i} ({transport:?})"
            );
        }
        for (i, lock) in locks.into_iter().enumerate() {
            let released = lock.release().await;
            // (The two lost ones still delete what is left of them: see `Tally::for_release`.)
            assert!(released.is_ok(), "lock {i}: {released:?}");
        }
        for node in &cluster {
            node.cmd(&[b"DEL", odd, b"redlock:{coalesce-7}"]);
        }
    })
    .await;
}

/// `EVALSHA` calls this node has served so far (`INFO commandstats`).
fn evalsha_calls(node: &crate::common::RedisNode) -> u64 {
    let stats = node.cmd(&[b"INFO", b"commandstats"]);
    stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn losing_the_majority_tells_the_holder_at_once() {
    let mut cluster = nodes(3);
    each_transport(urls(&cluster), async |_transport, [e]| {
        let lock = e
            .acquire_renewed(b"fragile", TTL, RenewPolicy::default())
            .await
            .unwrap();
        // Another owner's value replaces ours on a majority (as after an expiry + takeover).
        for node in &cluster[..2] {
            node.cmd(&[b"SET", b"redlock:{fragile}", b"intruder", b"PX", b"10000"]);
        }
        let noticed = tokio::time::timeout(TTL, lock.lost()).await;
        assert!(noticed.is_ok(), "lost() must fire at the next renewal");
        assert!(lock.is_lost());
        // release still cleans our key off the third node, and says the lock is someone else's now
        assert!(matches!(lock.release().await, Err(LockError::NotOwner)));
        // Decided by the two refusals: the third node's delete may land just after.
        let third = &cluster[2..];
        assert!(crate::common::nowhere(third, b"redlock:{fragile}", Duration::from_secs(2)).await);
        for node in &cluster[..2] {
            assert_eq!(node.cmd(&[b"GET", b"redlock:{fragile}"]), "intruder");
            node.cmd(&[b"DEL", b"redlock:{fragile}"]);
        }
    })
    .await;
    // Nodes dying: two of three killed, the next renewal cannot win.
    let e = engine(urls(&cluster), Default::default()).await;
    let lock = e
        .acquire_renewed(b"dying", TTL, RenewPolicy::default())
        .await
        .unwrap();
    cluster[0].kill9();
    cluster[1].kill9();
    assert!(tokio::time::timeout(TTL, lock.lost()).await.is_ok());
}

#[tokio::test]
async fn renewal_caps_let_the_lock_expire_and_say_so() {
    let (_cluster, [e]) = quick_nodes(3).await;
    let lock = e
        .acquire_renewed(b"capped", TTL, RenewPolicy::default().max_renewals(2))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    tokio::time::timeout(TTL * 4, lock.lost())
        .await
        .expect("expires after the cap");
    assert_eq!(lock.renewals(), 2);
    assert!(started.elapsed() >= TTL, "{:?}", started.elapsed());
    let lock = e
        .acquire_renewed(
            b"capped2",
            TTL,
            RenewPolicy::default().max_lifetime(TTL / 2),
        )
        .await
        .unwrap();
    tokio::time::timeout(TTL * 3, lock.lost())
        .await
        .expect("expires after the lifetime cap");
}

#[tokio::test]
async fn dropping_a_renewed_lock_stops_renewal_and_releases() {
    let (cluster, [e]) = quick_nodes(3).await;
    let lock = e
        .acquire_renewed(b"dropped", TTL, RenewPolicy::default())
        .await
        .unwrap();
    drop(lock);
    let gone = crate::common::eventually(Duration::from_millis(200), || {
        cluster.iter().all(|n| !n.exists(b"redlock:{dropped}"))
    });
    assert!(gone.await, "released in the background on drop");
}

#[tokio::test]
async fn bad_renewal_policies_are_rejected() {
    let (cluster, [e]) = quick_nodes(1).await;
    for every in [TTL, TTL * 2, Duration::ZERO] {
        let r = e
            .acquire_renewed(b"p", TTL, RenewPolicy::default().every(every))
            .await;
        assert!(matches!(r, Err(LockError::InvalidInput(_))), "{every:?}");
    }
    assert!(
        !cluster[0].exists(b"redlock:{p}"),
        "nothing acquired on bad input"
    );
}

#[tokio::test]
async fn with_lock_runs_renews_and_releases_even_on_panic() {
    let (cluster, [e]) = quick_nodes(3).await;
    let out = e
        .with_lock(b"scoped", TTL, |ctx| async move {
            tokio::time::sleep(TTL * 2).await; // longer than the TTL: renewal keeps it
            assert!(!ctx.is_lost());
            42
        })
        .await
        .unwrap();
    assert_eq!(out, 42);
    assert!(
        crate::common::eventually(Duration::from_millis(200), || !cluster[0]
            .exists(b"redlock:{scoped}"))
        .await
    );

    let e2 = e.clone();
    let panicked = tokio::spawn(async move {
        e2.with_lock(b"scoped", TTL, |_| async { panic!("work failed") })
            .await
    })
    .await;
    assert!(panicked.unwrap_err().is_panic());
    let lock = e
        .try_acquire(b"scoped", TTL)
        .await
        .expect("released after the panic");
    e.release(lock).await.unwrap();

    // Lost mid-way: the context fires, the result says so.
    let result = e
        .with_lock(b"scoped", TTL, |ctx| async move {
            for node in &cluster[..2] {
                node.cmd(&[b"SET", b"redlock:{scoped}", b"intruder", b"PX", b"10000"]);
            }
            tokio::time::timeout(TTL, ctx.lost()).await.is_ok()
        })
        .await;
    assert!(matches!(result, Err(LockError::Lost)), "{result:?}");
}

#[tokio::test]
async fn an_owner_reenters_what_it_holds_and_others_cannot() {
    let cluster = nodes(3);
    let e = retrying(&cluster, 2).await;
    let a = e.owner();
    let b = e.owner();
    assert_eq!(a.acquire(b"tree", TTL * 10).await.unwrap(), 1);
    assert_eq!(a.acquire(b"tree", TTL * 10).await.unwrap(), 2);
    assert!(matches!(
        b.acquire(b"tree", TTL * 10).await,
        Err(LockError::Contended { .. })
    ));
    assert_eq!(a.holds(b"tree").await, 2);
    assert_eq!(a.release(b"tree").await.unwrap(), 1);
    assert!(
        b.acquire(b"tree", TTL * 10).await.is_err(),
        "still held once"
    );
    assert_eq!(a.release(b"tree").await.unwrap(), 0);
    assert_eq!(b.acquire(b"tree", TTL * 10).await.unwrap(), 1);
    assert!(matches!(
        a.release(b"tree").await,
        Err(LockError::InvalidInput(_))
    ));
    assert_eq!(b.release(b"tree").await.unwrap(), 0);
    // re-entering with a longer TTL than is left extends the hold
    a.acquire(b"grow", TTL).await.unwrap();
    a.acquire(b"grow", TTL * 20).await.unwrap();
    let left = a.valid_until(b"grow").await.unwrap() - tokio::time::Instant::now();
    assert!(left > TTL * 10, "{left:?}");
    for _ in 0..2 {
        a.release(b"grow").await.unwrap();
    }
}

#[tokio::test]
async fn an_owner_waiting_for_one_resource_can_still_release_another() {
    // Owner a holds X and waits for Y; owner b holds Y and waits for X. a releasing X (from another
    // task) must not queue behind a's own wait for Y, or neither owner moves until retries run out.
    let cluster = nodes(3);
    let e = retrying(&cluster, 400).await;
    let a = std::sync::Arc::new(e.owner());
    let b = std::sync::Arc::new(e.owner());
    a.acquire(b"x", TTL * 20).await.unwrap();
    b.acquire(b"y", TTL * 20).await.unwrap();
    let started = tokio::time::Instant::now();
    let a_wants_y = tokio::spawn({
        let a = a.clone();
        async move { a.acquire(b"y", TTL * 20).await }
    });
    let b_wants_x = tokio::spawn({
        let b = b.clone();
        async move {
            b.acquire(b"x", TTL * 20).await?;
            // b is done with both: it lets go of y, which a is waiting for.
            b.release(b"x").await?;
            b.release(b"y").await
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(1), a.release(b"x"))
            .await
            .expect("a's release of x is not held up by its wait for y")
            .unwrap(),
        0
    );
    b_wants_x.await.unwrap().unwrap();
    assert_eq!(a_wants_y.await.unwrap().unwrap(), 1);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(a.release(b"y").await.unwrap(), 0);
}
