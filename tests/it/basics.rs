//! Acquire, release and extend on 1, 3 and 5 real nodes, on every transport.

use std::future::Future;
use std::time::Duration;

use crate::common::{each_transport, engine, nodes, urls};
use redlock_engine::LockError;
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(10);

#[tokio::test]
async fn acquire_release_extend_on_1_3_5_nodes() {
    for n in [1, 3, 5] {
        let cluster = nodes(n);
        each_transport(urls(&cluster), async |transport, [lock_engine]| {
            let resource = format!("basics-{n}-{transport:?}");
            // The engine takes its start time before it sends anything, so before its first poll
            // returns: `valid_until` may not exceed that moment + TTL - drift (drift = 1% + 2 ms).
            let mut acquiring = Box::pin(lock_engine.acquire(resource.as_bytes(), TTL));
            let first =
                std::future::poll_fn(|cx| std::task::Poll::Ready(acquiring.as_mut().poll(cx)))
                    .await;
            let after_first_poll = Instant::now();
            let mut lock = match first {
                std::task::Poll::Ready(result) => result.unwrap(),
                std::task::Poll::Pending => acquiring.await.unwrap(),
            };
            assert_eq!(lock.resource(), resource.as_bytes());
            let drift = TTL / 100 + Duration::from_millis(2);
            assert!(lock.valid_until() <= after_first_poll + TTL - drift);
            assert!(lock.remaining() > TTL / 2);
            let key = format!("redlock:{{{resource}}}");
            assert!(
                cluster.iter().all(|node| node.exists(key.as_bytes())),
                "key on every node"
            );

            // held: a second acquire on the same engine is contended
            let err = lock_engine
                .try_acquire(resource.as_bytes(), TTL)
                .await
                .unwrap_err();
            assert!(matches!(err, LockError::Contended { .. }), "{err:?}");

            let old_until = lock.valid_until();
            tokio::time::sleep(Duration::from_millis(20)).await;
            lock_engine
                .extend(&mut lock, Duration::from_secs(20))
                .await
                .unwrap();
            assert!(lock.valid_until() > old_until + Duration::from_secs(5));
            let pttl: i64 = cluster[0].cmd(&[b"PTTL", key.as_bytes()]).parse().unwrap();
            assert!(pttl > 15_000, "PEXPIRE applied: {pttl}");

            lock_engine.release(lock).await.unwrap();
            let gone = || cluster.iter().all(|node| !node.exists(key.as_bytes()));
            assert!(
                crate::common::eventually(Duration::from_secs(1), gone).await,
                "released everywhere"
            );
            // and free again
            let again = lock_engine
                .try_acquire(resource.as_bytes(), TTL)
                .await
                .unwrap();
            lock_engine.release(again).await.unwrap();
        })
        .await;
    }
}

#[tokio::test]
async fn two_engines_exclude_each_other() {
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |_transport, [a, b]| {
        let lock = a.acquire(b"shared", TTL).await.unwrap();
        let err = b.try_acquire(b"shared", TTL).await.unwrap_err();
        assert!(
            matches!(err, LockError::Contended { nodes: 3, .. }),
            "{err:?}"
        );
        // b's retries run out while a holds it
        assert!(b.acquire(b"shared", TTL).await.is_err());
        a.release(lock).await.unwrap();
        let lock = b.try_acquire(b"shared", TTL).await.unwrap();
        b.release(lock).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn many_concurrent_contenders_get_one_lock_at_a_time() {
    let cluster = nodes(3);
    let lock_engine = engine(urls(&cluster), redlock_engine::Transport::Pipeline).await;
    let mut handles = Vec::new();
    for _ in 0..32 {
        let e = lock_engine.clone();
        handles.push(tokio::spawn(
            async move { e.try_acquire(b"hot", TTL).await },
        ));
    }
    let mut won = Vec::new();
    for h in handles {
        if let Ok(lock) = h.await.unwrap() {
            won.push(lock);
        }
    }
    assert!(won.len() <= 1, "{} contenders won at once", won.len());
    for lock in won {
        lock_engine.release(lock).await.unwrap();
    }
}

#[tokio::test]
async fn non_owner_release_and_extend_leave_the_owner_untouched() {
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |_transport, [e]| {
        let mut old = e
            .acquire(b"handover", Duration::from_millis(300))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await; // old expires
        let new = e.acquire(b"handover", TTL).await.unwrap();

        assert!(matches!(
            e.extend(&mut old, TTL).await,
            Err(LockError::AlreadyExpired)
        ));
        // force a round trip even though the old lock knows it expired: release always asks the nodes
        let err = e.release(old).await.unwrap_err();
        assert!(matches!(err, LockError::NotOwner), "{err:?}");
        for node in &cluster {
            let pttl: i64 = node.cmd(&[b"PTTL", b"redlock:{handover}"]).parse().unwrap();
            assert!(pttl > 9_000, "new owner's key untouched: {pttl}");
        }
        e.release(new).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn extend_by_a_non_owner_fails_on_the_nodes() {
    // The old lock still believes it is valid (a long TTL locally) but its keys were replaced by another
    // owner's: the nodes must refuse the extend.
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |_transport, [e]| {
        let mut lock = e.acquire(b"stolen", TTL).await.unwrap();
        for node in &cluster {
            node.cmd(&[
                b"SET",
                b"redlock:{stolen}",
                b"someone-else",
                b"PX",
                b"60000",
            ]);
        }
        let err = e.extend(&mut lock, TTL).await.unwrap_err();
        assert!(matches!(err, LockError::NotOwner), "{err:?}");
        for node in &cluster {
            assert_eq!(node.cmd(&[b"GET", b"redlock:{stolen}"]), "someone-else");
            let pttl: i64 = node.cmd(&[b"PTTL", b"redlock:{stolen}"]).parse().unwrap();
            assert!(pttl > 50_000, "not re-expired by the non-owner: {pttl}");
        }
        let err = e.release(lock).await.unwrap_err();
        assert!(matches!(err, LockError::NotOwner), "{err:?}");
        assert!(cluster.iter().all(|n| n.exists(b"redlock:{stolen}")));
        for node in &cluster {
            node.cmd(&[b"DEL", b"redlock:{stolen}"]);
        }
    })
    .await;
}

#[tokio::test]
async fn release_after_expiry_reports_already_expired() {
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |_transport, [e]| {
        let lock = e
            .acquire(b"short", Duration::from_millis(100))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(!lock.is_valid());
        let err = e.release(lock).await.unwrap_err();
        assert!(matches!(err, LockError::AlreadyExpired), "{err:?}");
    })
    .await;
}

#[tokio::test]
async fn binary_resources_work() {
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |_transport, [e]| {
        let resource: &[u8] = b"\0\xff\r\n' end) redis.call('FLUSHALL') --";
        let lock = e.acquire(resource, TTL).await.unwrap();
        assert_eq!(lock.resource(), resource);
        // No hash tag in the name, so the engine adds one around it.
        let mut key = b"redlock:{".to_vec();
        key.extend_from_slice(resource);
        key.push(b'}');
        assert!(cluster.iter().all(|n| n.exists(&key)));
        e.release(lock).await.unwrap();
        // release returns once a majority confirmed; the last node's delete may still be on its way
        assert!(
            crate::common::eventually(Duration::from_secs(1), || cluster
                .iter()
                .all(|n| !n.exists(&key)))
            .await
        );
    })
    .await;
}

#[tokio::test]
async fn dropping_an_acquire_mid_flight_releases_in_the_background() {
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |transport, [e]| {
        for _ in 0..20 {
            // Poll once (the SETs are queued on every node), then drop the future mid-round.
            let mut fut = Box::pin(e.acquire(b"dropped", TTL));
            let first =
                std::future::poll_fn(|cx| std::task::Poll::Ready(fut.as_mut().poll(cx))).await;
            assert!(first.is_pending());
            drop(fut);
        }
        let gone = crate::common::eventually(Duration::from_secs(2), || {
            cluster.iter().all(|n| !n.exists(b"redlock:{dropped}"))
        })
        .await;
        assert!(
            gone,
            "keys of dropped attempts must be released ({transport:?})"
        );
        let lock = e.try_acquire(b"dropped", TTL).await;
        e.release(lock.expect("free again after the dropped attempts"))
            .await
            .unwrap();
    })
    .await;
}
