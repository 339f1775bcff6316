//! Read-write locks: shared readers, an exclusive writer, writers not starved by readers.

use std::time::Duration;

use crate::common::{attempt, each_transport, engine_with, nodes, retrying, transports, urls};
use redlock_engine::{Config, LockError, Redlock};

const TTL: Duration = Duration::from_secs(5);

#[tokio::test]
async fn readers_share_writers_exclude() {
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |_transport, [e]| {
        let r1 = e.acquire_read(b"doc", TTL).await.unwrap();
        let mut r2 = e.acquire_read(b"doc", TTL).await.unwrap();
        assert!(r1.is_read());
        // a writer is refused while readers hold it
        let err = attempt(e.lock(b"doc").write(), TTL).await.unwrap_err();
        assert!(matches!(err, LockError::Contended { .. }), "{err:?}");
        // the refused try withdrew its intent: readers still get in
        let r3 = attempt(e.lock(b"doc").read(), TTL).await.unwrap();
        e.extend(&mut r2, Duration::from_secs(10)).await.unwrap();
        for lock in [r1, r2, r3] {
            e.release(lock).await.unwrap();
        }
        let mut w = e.acquire_write(b"doc", TTL).await.unwrap();
        assert!(!w.is_read());
        assert!(
            attempt(e.lock(b"doc").read(), TTL).await.is_err(),
            "no reader while a writer holds it"
        );
        assert!(
            attempt(e.lock(b"doc").write(), TTL).await.is_err(),
            "no second writer"
        );
        e.extend(&mut w, Duration::from_secs(10)).await.unwrap();
        e.release(w).await.unwrap();
        let r = e.acquire_read(b"doc", TTL).await.unwrap();
        e.release(r).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_waiting_writer_is_not_starved_by_new_readers() {
    let cluster = nodes(3);
    let e = retrying(&cluster, 200).await;
    // Readers keep arriving, each holding 50 ms, overlapping: without writer preference the resource is
    // never free of readers.
    let readers = {
        let e = e.clone();
        tokio::spawn(async move {
            let mut held = std::collections::VecDeque::new();
            let mut refused = 0;
            for _ in 0..200 {
                match attempt(e.lock(b"busy").read(), TTL).await {
                    Ok(lock) => held.push_back(lock),
                    Err(_) => refused += 1,
                }
                // each reader holds for about 4 ticks, so at least one is always in when new ones come
                if held.len() > 3 || (!held.is_empty() && refused > 0) {
                    e.release(held.pop_front().unwrap()).await.unwrap();
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            for lock in held {
                let _ = e.release(lock).await;
            }
            refused
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    let w = e
        .acquire_write(b"busy", TTL)
        .await
        .expect("the writer gets in despite the readers");
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(1), "writer waited {waited:?}");
    e.release(w).await.unwrap();
    let refused = readers.await.unwrap();
    assert!(
        refused > 0,
        "readers were held back while the writer waited"
    );
}

#[tokio::test]
async fn a_reader_limit_is_enforced_and_zero_is_rejected() {
    let cluster = nodes(1);
    let config = |max_readers| Config {
        max_readers,
        ..crate::common::fresh_config(urls(&cluster))
    };
    assert!(matches!(
        Redlock::new(config(0)).await,
        Err(LockError::InvalidConfig(_))
    ));
    let e = Redlock::new(config(2)).await.unwrap();
    let a = attempt(e.lock(b"limited").read(), TTL).await.unwrap();
    let b = attempt(e.lock(b"limited").read(), TTL).await.unwrap();
    assert!(attempt(e.lock(b"limited").read(), TTL).await.is_err());
    e.release(a).await.unwrap();
    let c = attempt(e.lock(b"limited").read(), TTL).await.unwrap();
    e.release(b).await.unwrap();
    e.release(c).await.unwrap();
}

#[tokio::test]
async fn expired_readers_do_not_block_a_writer_and_a_frozen_node_does_not_block_anyone() {
    let cluster = nodes(5);
    let e = engine_with(&cluster, |b| b.node_timeout(Duration::from_millis(50))).await;
    cluster[4].freeze();
    let crashed_reader = e
        .acquire_read(b"rw", Duration::from_millis(200))
        .await
        .unwrap();
    std::mem::forget(crashed_reader); // never released: must expire on its own
    tokio::time::sleep(Duration::from_millis(300)).await;
    let w = attempt(e.lock(b"rw").write(), TTL)
        .await
        .expect("expired reader entries do not count");
    let mut lock = w;
    e.extend(&mut lock, TTL).await.unwrap();
    e.release(lock).await.unwrap();
    cluster[4].thaw();
}

#[tokio::test]
async fn a_cancelled_writer_withdraws_its_intent() {
    let cluster = nodes(3);
    for transport in transports() {
        let e = engine_with(&cluster, |b| {
            b.transport(transport)
                .retry(1000, Duration::from_millis(5), Duration::from_millis(5))
        })
        .await;
        let reader = e.acquire_read(b"cancel", TTL).await.unwrap();
        let writer = tokio::spawn({
            let e = e.clone();
            async move { e.acquire_write(b"cancel", TTL).await }
        });
        // The writer's intent holds new readers back...
        assert!(
            crate::common::everywhere(
                &cluster,
                b"redlock:{cancel}:rw:intent",
                Duration::from_secs(2)
            )
            .await
        );
        assert!(attempt(e.lock(b"cancel").read(), TTL).await.is_err());
        // ...until its caller gives up on it, not until the intent's TTL (5 s) runs out.
        writer.abort();
        assert!(writer.await.unwrap_err().is_cancelled());
        assert!(
            crate::common::nowhere(
                &cluster,
                b"redlock:{cancel}:rw:intent",
                Duration::from_secs(1)
            )
            .await,
            "{transport:?}: intent withdrawn"
        );
        let second = attempt(e.lock(b"cancel").read(), TTL).await.unwrap();
        e.release(second).await.unwrap();
        e.release(reader).await.unwrap();
    }
}

/// 100k readers that died without releasing (planted, long expired): no script stalls a node on
/// them (each drops at most 1,000), and since most remain after a script, only live readers count:
/// the reader limit, and a writer, which gets the lock at its first try.
#[tokio::test]
async fn a_crowd_of_expired_readers_neither_stalls_a_node_nor_counts() {
    let cluster = nodes(3);
    let e = Redlock::new(Config {
        max_readers: 2,
        ..crate::common::fresh_config(urls(&cluster))
    })
    .await
    .unwrap();
    for n in &cluster {
        n.cmd(&[
            b"EVAL",
            b"for i = 1, 100000 do redis.call('ZADD', KEYS[1], i, 'dead' .. i) end",
            b"1",
            b"redlock:{crowd}:rw:readers",
        ]);
        // Half the engine's default node deadline.
        n.cmd_str(&["CONFIG", "SET", "slowlog-log-slower-than", "25000"]);
        n.cmd_str(&["SLOWLOG", "RESET"]);
    }
    let a = attempt(e.lock(b"crowd").read(), TTL).await.unwrap();
    let b = attempt(e.lock(b"crowd").read(), TTL).await.unwrap();
    assert!(
        attempt(e.lock(b"crowd").read(), TTL).await.is_err(),
        "two live readers are the limit"
    );
    e.release(a).await.unwrap();
    e.release(b).await.unwrap();
    let w = attempt(e.lock(b"crowd").write(), TTL)
        .await
        .expect("expired readers do not count");
    e.release(w).await.unwrap();
    for n in &cluster {
        let left: u64 = n
            .cmd_str(&["ZCARD", "redlock:{crowd}:rw:readers"])
            .parse()
            .unwrap();
        assert!(
            left > 90_000,
            "each script drops at most 1,000: {left} left"
        );
        assert_eq!(
            n.cmd_str(&["SLOWLOG", "LEN"]),
            "0",
            "a command ran for 25 ms or more on :{}",
            n.port
        );
    }
}
