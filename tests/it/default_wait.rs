//! The request's default wait ([`Wait::UntilAcquired`]): as long as another owner holds the lock,
//! far past what `retry_count` retries would take, for each kind's waiter in the one wait loop (the
//! exclusive family's, the fair lock's and the slots'); an outage ends it with its error instead of
//! a hang; the per-kind methods keep the configured wait.

use std::time::{Duration, Instant};

use crate::common::{dead_url, nodes, urls};
use redlock_engine::{Config, LockError, LockRequest, Redlock, Wait};

/// How long the holder keeps the lock: well past the waiter's retries (3 x 10 ms).
const HELD: Duration = Duration::from_millis(1500);

/// A request's kind, set on a request built with the default wait.
type Shape = fn(LockRequest<'_>) -> LockRequest<'_>;

fn config(urls: Vec<String>) -> Config {
    Config {
        retry_count: 3,
        retry_delay: Duration::from_millis(10),
        retry_jitter: Duration::from_millis(10),
        ..crate::common::fresh_config(urls)
    }
}

#[tokio::test]
async fn the_default_waits_while_another_owner_holds_the_lock() {
    let cluster = nodes(3);
    let holder = Redlock::new(config(urls(&cluster))).await.unwrap();
    let waiter = Redlock::new(config(urls(&cluster))).await.unwrap();
    assert_eq!(Wait::default(), Wait::UntilAcquired);
    let kinds: [(&str, Shape); 4] = [
        ("plain", |r| r),
        ("fair", |r| r.fair()),
        ("slots", |r| r.slots(1)),
        ("write", |r| r.write()),
    ];
    for (resource, kind) in kinds {
        let held = kind(holder.lock(resource)).once().await.unwrap();
        // The configured wait gives up after its 3 retries...
        let quick = Instant::now();
        if resource == "plain" {
            let err = waiter
                .acquire(resource, Duration::from_secs(10))
                .await
                .unwrap_err();
            assert!(matches!(err, LockError::Contended { .. }), "{err:?}");
            assert!(quick.elapsed() < HELD / 2, "{:?}", quick.elapsed());
        }
        // ...the default waits until the holder lets go.
        let began = Instant::now();
        let (got, ()) = tokio::join!(kind(waiter.lock(resource)), async {
            tokio::time::sleep(HELD).await;
            held.release().await.unwrap();
        });
        let got = got.unwrap_or_else(|e| panic!("{resource}: {e:?}"));
        assert!(began.elapsed() >= HELD, "{resource}: {:?}", began.elapsed());
        got.release().await.unwrap();
    }
}

#[tokio::test]
async fn an_outage_ends_the_default_wait_with_its_error() {
    // Two of three nodes unreachable: no round can win, and none is lost to another owner.
    let cluster = nodes(1);
    let mut urls = urls(&cluster);
    urls.push(dead_url());
    urls.push(dead_url());
    let redlock = Redlock::new(config(urls)).await.unwrap();
    for fair in [false, true] {
        let request = match fair {
            true => redlock.lock("down").fair(),
            false => redlock.lock("down"),
        };
        let ended = tokio::time::timeout(Duration::from_secs(20), request).await;
        let err = ended.expect("an outage ends the wait").unwrap_err();
        assert!(
            !matches!(err, LockError::Contended { .. }),
            "fair {fair}: {err:?}"
        );
    }
}

#[tokio::test]
async fn the_acquire_timeout_bounds_the_default_wait() {
    let cluster = nodes(3);
    let holder = Redlock::new(config(urls(&cluster))).await.unwrap();
    let waiter = Redlock::new(Config {
        acquire_timeout: Some(Duration::from_millis(600)),
        ..config(urls(&cluster))
    })
    .await
    .unwrap();
    let _held = holder.lock("bounded").once().await.unwrap();
    let began = Instant::now();
    let err = waiter.lock("bounded").await.unwrap_err();
    assert!(matches!(err, LockError::Timeout { .. }), "{err:?}");
    let took = began.elapsed();
    assert!(
        took >= Duration::from_millis(550) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[tokio::test]
async fn a_queued_fair_waiter_ends_its_wait_when_the_nodes_go_down() {
    let mut cluster = nodes(3);
    let holder = Redlock::new(config(urls(&cluster))).await.unwrap();
    let waiter = Redlock::new(config(urls(&cluster))).await.unwrap();
    let _held = holder.lock("fair-outage").fair().await.unwrap();
    let wait = tokio::spawn(async move { waiter.lock("fair-outage").fair().await.map(drop) });
    // Queued behind the holder, then two of three nodes die.
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster[1].kill9();
    cluster[2].kill9();
    let ended = tokio::time::timeout(Duration::from_secs(20), wait).await;
    let err = ended
        .expect("an outage ends the wait")
        .unwrap()
        .unwrap_err();
    assert!(!matches!(err, LockError::Contended { .. }), "{err:?}");
}
