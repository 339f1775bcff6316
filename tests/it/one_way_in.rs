//! One way in: the request takes every kind and its scoped form (`.with`), and every held thing
//! releases on drop — a guard, a renewed lock (also dropped off the runtime), an owner's holds; a
//! renewal asked for outside a runtime is refused, not a panic, and releases the lock.

use std::time::{Duration, Instant};

use crate::common::fresh_nodes;
use redlock_engine::{LockError, Redlock, RenewPolicy};

/// Whether `other` gets `resource` within a second: far less than the 30 s TTL, so only a release
/// can have freed it.
async fn freed(other: &Redlock, resource: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        if let Ok(guard) = other.lock(resource).once().await {
            guard.release().await.unwrap();
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn the_scoped_form_is_on_the_request_for_every_kind() {
    let (_cluster, [redlock, other]) = fresh_nodes(3).await;
    let plain = redlock
        .lock("scoped")
        .with(|ctx| async move { !ctx.is_lost() });
    assert!(plain.await.unwrap());
    let permit = redlock
        .lock("scoped-permit")
        .permits(2)
        .with(|_| async { 7 })
        .await;
    assert_eq!(permit.unwrap(), 7);
    let renewed = redlock
        .lock("scoped-renewed")
        .ttl(Duration::from_millis(600))
        .renewed(RenewPolicy::default())
        .with(|ctx| async move {
            tokio::time::sleep(Duration::from_millis(900)).await;
            ctx.is_lost()
        })
        .await;
    assert!(!renewed.unwrap(), "renewed past its TTL");
    for resource in ["scoped", "scoped-renewed"] {
        assert!(
            freed(&other, resource).await,
            "{resource} released after the work"
        );
    }
}

#[tokio::test]
async fn an_owner_dropped_with_holds_releases_them() {
    let (_cluster, [redlock, other]) = fresh_nodes(3).await;
    let owner = redlock.owner();
    let ttl = Duration::from_secs(30);
    assert_eq!(owner.acquire("owned", ttl).await.unwrap(), 1);
    assert_eq!(owner.acquire("owned", ttl).await.unwrap(), 2);
    assert_eq!(owner.acquire("owned-too", ttl).await.unwrap(), 1);
    assert!(!freed(&other, "owned").await, "held while the owner lives");
    drop(owner);
    assert!(freed(&other, "owned").await);
    assert!(freed(&other, "owned-too").await);
}

#[tokio::test]
async fn a_renewed_lock_dropped_off_the_runtime_is_released_and_renew_there_is_refused() {
    let (_cluster, [redlock, other]) = fresh_nodes(3).await;
    let renewed = redlock
        .lock("renewed-off")
        .renewed(RenewPolicy::default())
        .await
        .unwrap();
    std::thread::spawn(move || drop(renewed)).join().unwrap();
    assert!(
        freed(&other, "renewed-off").await,
        "dropped on a plain thread"
    );

    let lock = redlock.lock("renew-off").await.unwrap().into_lock();
    let engine = redlock.clone();
    let refused = std::thread::spawn(move || {
        engine
            .renew(lock, RenewPolicy::default())
            .map(|renewed| renewed.is_valid())
    })
    .join()
    .expect("no panic outside a runtime");
    assert!(
        matches!(refused, Err(LockError::InvalidInput(ref why)) if why.contains("runtime")),
        "{refused:?}"
    );
    assert!(
        freed(&other, "renew-off").await,
        "the refused lock is released"
    );
}
