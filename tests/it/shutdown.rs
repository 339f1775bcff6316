//! `Redlock::shutdown`: every lock the engine holds is released at once (another engine gets them
//! long before their TTL), calls waiting in it end with `Closed` and get no lock, and later acquires
//! are refused.

use std::time::{Duration, Instant};

use crate::common::fresh_nodes;
use redlock_engine::{LockError, RenewPolicy};

const TTL: Duration = Duration::from_secs(30);

#[tokio::test]
async fn shutdown_releases_every_held_lock_and_refuses_what_comes_after() {
    let (_cluster, [a, b]) = fresh_nodes(3).await;

    // What a service holds when it stops: a guard, a renewed lock, a bare lock, a fair lock, a
    // permit, and a task of its own waiting for the guard's resource.
    let guard = a.lock("sd-guard").ttl(TTL).await.unwrap();
    let renewed = a
        .lock("sd-renewed")
        .ttl(TTL)
        .renewed(RenewPolicy::default())
        .await
        .unwrap();
    let bare = a.lock("sd-bare").ttl(TTL).await.unwrap().into_lock();
    let fair = a.lock("sd-fair").fair().ttl(TTL).await.unwrap();
    let permit = a.lock("sd-permit").permits(1).ttl(TTL).await.unwrap();
    let local_waiter = tokio::spawn({
        let a = a.clone();
        async move { a.lock("sd-guard").ttl(TTL).wait_forever().await.map(drop) }
    });
    // And one waiting at the semaphore's local gate (K = 1, held above).
    let gate_waiter = tokio::spawn({
        let a = a.clone();
        async move {
            a.lock("sd-permit")
                .permits(1)
                .ttl(TTL)
                .wait_forever()
                .await
                .map(drop)
        }
    });
    // Another process's engine waits for the guard's resource.
    let remote_waiter = tokio::spawn({
        let b = b.clone();
        async move {
            let began = Instant::now();
            let got = b
                .lock("sd-guard")
                .ttl(TTL)
                .wait_up_to(Duration::from_secs(10))
                .await;
            (got.map(drop), began.elapsed())
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;

    let began = Instant::now();
    a.shutdown().await;
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "bounded: {:?}",
        began.elapsed()
    );

    // Every resource is free at once for another engine, far inside the locks' 30 s TTL.
    let (got, waited) = remote_waiter.await.unwrap();
    got.expect("the waiting engine gets the guard's resource");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    for resource in ["sd-renewed", "sd-bare", "sd-fair"] {
        let taken = match resource {
            "sd-fair" => b.lock(resource).fair().once().await.map(drop),
            _ => b.lock(resource).once().await.map(drop),
        };
        taken.unwrap_or_else(|e| panic!("{resource} still held after the shutdown: {e}"));
    }
    let _permit = b
        .lock("sd-permit")
        .permits(1)
        .once()
        .await
        .expect("the permit is free");

    // The engine's own waiter got no lock, and nothing later is granted.
    for waiter in [local_waiter, gate_waiter] {
        match waiter.await.unwrap() {
            Err(LockError::Closed) => {}
            other => panic!("a waiter of the shut-down engine: {other:?}"),
        }
    }
    assert!(matches!(
        a.lock("sd-later").once().await,
        Err(LockError::Closed)
    ));
    assert!(matches!(
        a.acquire("sd-later", TTL).await,
        Err(LockError::Closed)
    ));
    // What it still holds says it is not valid any more, and holding on to it is harmless:
    // releasing finds the keys gone.
    assert!(!guard.is_valid() && !bare.is_valid() && !renewed.is_valid());
    assert_eq!(bare.remaining(), Duration::ZERO);
    assert!(guard.release().await.is_err());
    drop((renewed, fair, permit));
    assert!(a.release(bare).await.is_err());
    a.shutdown().await; // a second call finds nothing left
}
