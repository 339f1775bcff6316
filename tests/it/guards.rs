//! The service developer's API on real nodes: guards release on drop, each kind through one request
//! shape, and per-call waits that leave nothing behind when their future is dropped.

use std::future::IntoFuture;
use std::time::Duration;

use crate::common::{each_transport, engine, nodes, quick_nodes, urls};
use redlock_engine::{ErrorClass, LockError, RenewPolicy, Verdict, Wait};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(30);

/// A request's kind, set on a fresh request.
type Shape = fn(redlock_engine::LockRequest<'_>) -> redlock_engine::LockRequest<'_>;

/// Whether no node holds anything for `resource` (its key, readers, intent, permits, queue).
async fn free(e: &redlock_engine::Redlock, resource: &str) -> bool {
    let seen = e.inspect(resource).await.unwrap();
    seen.verdict == Verdict::Free
        && seen.nodes.iter().all(|n| {
            let s = n.state.as_ref().unwrap();
            !s.held && s.write_intent.is_none() && s.permits == 0 && s.fair_waiters == 0
        })
}

#[tokio::test]
async fn a_dropped_guard_releases_at_once_for_every_kind() {
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |transport, [a, b]| {
        let kinds: [(&str, Shape); 6] = [
            ("exclusive", |r| r),
            ("fenced", |r| r.fenced()),
            ("write", |r| r.write()),
            ("fair", |r| r.fair()),
            ("permits", |r| r.permits(1)),
            ("slots", |r| r.slots(1)),
        ];
        for (name, shape) in kinds {
            let resource = format!("guard-{name}-{transport:?}");
            let guard = shape(a.lock(&resource)).ttl(TTL).once().await.unwrap();
            assert!(guard.is_valid() && guard.remaining() > Duration::from_secs(20));
            if name == "fenced" {
                assert!(guard.fencing_token().is_some());
            }
            // Held: the other engine's single attempt is refused, as busy.
            let refused = shape(b.lock(&resource)).ttl(TTL).once().await.unwrap_err();
            assert_eq!(refused.class(), ErrorClass::Busy, "{name}: {refused}");
            let dropped = Instant::now();
            drop(guard);
            // Not after the 30 s TTL: within a second.
            let taken = shape(b.lock(&resource))
                .ttl(TTL)
                .wait_up_to(Duration::from_secs(5))
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(dropped.elapsed() < Duration::from_secs(2), "{name}");
            taken.release().await.unwrap();
            // Read through the engine that released: a release returns once a majority confirmed
            // it, and the other engine's read could reach the last node before the release does
            // (its one connection per node puts this read behind it, and behind its refused
            // attempt's leave).
            assert!(free(&b, &resource).await, "{name}: something left behind");
        }
    })
    .await;
}

#[tokio::test]
async fn a_guard_releases_awaited_extends_and_derefs() {
    let (cluster, [e]) = quick_nodes(3).await;
    let mut guard = e
        .lock("guard-calls")
        .ttl(Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(guard.resource(), b"guard-calls");
    guard.extend(TTL).await.unwrap();
    assert!(guard.remaining() > Duration::from_secs(20));
    guard.release().await.unwrap();
    assert!(free(&e, "guard-calls").await);
    // Kept as a plain lock: no release on drop.
    let lock = e.lock("guard-kept").await.unwrap().into_lock();
    assert!(!free(&e, "guard-kept").await);
    e.release(lock).await.unwrap();
    // Renewed through the request: every accessor of a plain lock.
    let renewed = e
        .lock("guard-renewed")
        .fenced()
        .ttl(Duration::from_secs(3))
        .renewed(RenewPolicy::default())
        .await
        .unwrap();
    assert_eq!(renewed.resource(), b"guard-renewed");
    assert!(renewed.fencing_token().is_some() && renewed.is_valid() && !renewed.is_read());
    drop(renewed);
    let e2 = engine(urls(&cluster), Default::default()).await;
    let again = e2
        .lock("guard-renewed")
        .wait_up_to(Duration::from_secs(2))
        .await;
    assert!(
        again.is_ok(),
        "a dropped renewed lock is released: {again:?}"
    );
}

/// A guard dropped while its runtime shuts down (its task is cancelled) does not panic. Its release
/// is queued but cannot reach the nodes (the connections' tasks end with the runtime): the lock
/// expires at its TTL, as documented on `LockGuard`.
#[test]
fn a_guard_dropped_during_runtime_shutdown_does_not_panic() {
    let cluster = nodes(1);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let e = rt.block_on(engine(urls(&cluster), Default::default()));
    let ttl = Duration::from_secs(1);
    let guard = rt
        .block_on(e.lock("guard-shutdown").ttl(ttl).into_future())
        .unwrap();
    rt.spawn(async move {
        let _held = guard;
        std::future::pending::<()>().await;
    });
    drop(rt);
    // No panic; the lock is free again by its TTL at the latest.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let e = engine(urls(&cluster), Default::default()).await;
        let next = e
            .lock("guard-shutdown")
            .wait_up_to(Duration::from_secs(5))
            .await;
        assert!(next.is_ok(), "{next:?}");
    });
}

#[tokio::test]
async fn every_wait_dropped_mid_wait_leaves_nothing_behind() {
    let (_cluster, [holder, waiter]) = quick_nodes(3).await;
    for kind in ["exclusive", "write", "fair", "permits"] {
        let resource = format!("waits-{kind}");
        fn shaped<'a>(
            kind: &str,
            r: redlock_engine::LockRequest<'a>,
        ) -> redlock_engine::LockRequest<'a> {
            match kind {
                "write" => r.write(),
                "fair" => r.fair(),
                "permits" => r.permits(1),
                _ => r,
            }
        }
        let shape = |r| shaped(kind, r);
        let held = shape(holder.lock(&resource)).ttl(TTL).await.unwrap();
        let once = shape(waiter.lock(&resource)).once().await.unwrap_err();
        assert!(once.is_busy(), "{kind}: {once}");
        for wait in [Wait::UpTo(Duration::from_secs(60)), Wait::Forever] {
            let request = shape(waiter.lock(&resource)).ttl(TTL).wait(wait);
            let cut = tokio::time::timeout(Duration::from_millis(300), request.into_future()).await;
            assert!(cut.is_err(), "{kind} {wait:?}: should still wait");
        }
        // Bounded: gives up after the bound with the last attempt's cause.
        let began = Instant::now();
        let bounded = shape(waiter.lock(&resource))
            .wait_up_to(Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(began.elapsed() < Duration::from_secs(3), "{kind}");
        assert!(bounded.is_busy(), "{kind}: {bounded}");
        held.release().await.unwrap();
        let until = Instant::now() + Duration::from_secs(3);
        while !free(&holder, &resource).await {
            assert!(
                Instant::now() < until,
                "{kind}: a waiter left something behind"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test]
async fn a_bounded_wait_is_acquired_when_the_holder_leaves() {
    let (_cluster, [holder, waiter]) = quick_nodes(3).await;
    let held = holder.lock("handover").ttl(TTL).await.unwrap();
    let waiting = tokio::spawn(async move {
        let began = Instant::now();
        let guard = waiter.lock("handover").wait_forever().await;
        (guard.map(|g| g.into_lock()), began.elapsed(), waiter)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    held.release().await.unwrap();
    let (lock, waited, waiter) = waiting.await.unwrap();
    assert!(
        waited >= Duration::from_millis(400),
        "it waited for the holder"
    );
    waiter.release(lock.unwrap()).await.unwrap();
}

#[test]
fn the_timeout_keeps_its_last_cause() {
    let busy = LockError::Contended {
        taken: 3,
        nodes: 3,
        local: false,
        retry_after: None,
        holder: None,
    };
    let timeout = LockError::Timeout {
        attempts: 4,
        last: Some(Box::new(busy)),
    };
    assert_eq!(timeout.class(), ErrorClass::Busy);
    assert!(timeout.is_retryable());
    assert!(
        timeout.to_string().contains("held by another owner"),
        "{timeout}"
    );
    assert!(std::error::Error::source(&timeout).is_some());
}
