//! Multi-resource locks: all resources or none, on every node; a node down; a node frozen.

use std::time::Duration;

use crate::common::{attempt, each_transport, engine, engine_with, nodes, transports, urls};
use redlock_engine::{LockError, Transport};

const TTL: Duration = Duration::from_secs(5);

#[tokio::test]
async fn all_or_none_on_every_node() {
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |_transport, [e]| {
        let mut both = e.acquire_many(&[b"acct:1", b"acct:2"], TTL).await.unwrap();
        assert_eq!(
            both.resources().collect::<Vec<_>>(),
            vec![&b"acct:1"[..], b"acct:2"]
        );
        for node in &cluster {
            assert!(node.exists(b"redlock:{acct:1}") && node.exists(b"redlock:{acct:2}"));
        }
        // overlapping sets and singles are refused, and leave nothing behind
        let err = attempt(e.lock_many([b"acct:2", b"acct:3"]), TTL)
            .await
            .unwrap_err();
        assert!(matches!(err, LockError::Contended { .. }), "{err:?}");
        assert!(e.try_acquire(b"acct:1", TTL).await.is_err());
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            cluster.iter().all(|n| !n.exists(b"redlock:{acct:3}")),
            "no half lock on acct:3"
        );

        e.extend(&mut both, Duration::from_secs(20)).await.unwrap();
        for node in &cluster {
            for key in [&b"redlock:{acct:1}"[..], b"redlock:{acct:2}"] {
                let pttl: i64 = node.cmd(&[b"PTTL", key]).parse().unwrap();
                assert!(pttl > 15_000, "both keys extended: {pttl}");
            }
        }
        e.release(both).await.unwrap();
        let free = crate::common::eventually(Duration::from_secs(1), || {
            cluster
                .iter()
                .all(|n| !n.exists(b"redlock:{acct:1}") && !n.exists(b"redlock:{acct:2}"))
        });
        assert!(free.await);
        let other = e.acquire_many(&[b"acct:2", b"acct:3"], TTL).await.unwrap();
        e.release(other).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_node_down_or_frozen_does_not_block_the_majority() {
    let mut cluster = nodes(5);
    for transport in transports() {
        let e = engine_with(&cluster, |b| {
            b.transport(transport)
                .node_timeout(Duration::from_millis(50))
        })
        .await;
        cluster[0].kill9();
        cluster[1].freeze();
        let started = std::time::Instant::now();
        let lock = e
            .acquire_many(&[b"m:a", b"m:b", b"m:c"], TTL)
            .await
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_millis(300),
            "{:?}",
            started.elapsed()
        );
        e.release(lock).await.unwrap();
        cluster[1].thaw();
        cluster[0].restart();
    }
}

#[tokio::test]
async fn bad_resource_lists_are_rejected() {
    let cluster = nodes(1);
    let e = engine(urls(&cluster), Transport::Pipeline).await;
    let seventeen: Vec<Vec<u8>> = (0..17).map(|i| format!("r{i}").into_bytes()).collect();
    let seventeen: Vec<&[u8]> = seventeen.iter().map(|r| &r[..]).collect();
    let cases: Vec<(&[&[u8]], &str)> = vec![
        (&[], "empty"),
        (&[b"a", b"b", b"a"], "twice"),
        (&[b"a", b""], "empty"),
        (&seventeen, "at most 16"),
    ];
    for (resources, why) in cases {
        match e.acquire_many(resources, TTL).await {
            Err(LockError::InvalidInput(msg)) => assert!(msg.contains(why), "{msg}"),
            other => panic!("{resources:?}: {other:?}"),
        }
    }
    assert!(matches!(
        e.acquire_many(&[b"a"], Duration::ZERO).await,
        Err(LockError::InvalidInput(_))
    ));
}
