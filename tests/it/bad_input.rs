//! Bad input gets a clear, typed error: never a panic, never a false acquire.

use std::time::Duration;

use crate::common::{each_transport, engine, engine_with, nodes, quick_nodes, urls};
use redlock_engine::{Config, LockError, Redlock};

fn invalid_config(err: Result<Redlock, LockError>) -> String {
    match err {
        Err(LockError::InvalidConfig(why)) => why,
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_configurations_are_rejected_with_a_reason() {
    let cluster = nodes(1);
    let good = cluster[0].url();
    let with = |f: &dyn Fn(&mut Config)| {
        let mut c = crate::common::fresh_config(vec![good.clone()]);
        f(&mut c);
        c
    };
    // A configuration whose only node is `url`.
    let only = |url: &str| with(&|c| c.nodes = vec![url.into()]);
    let cases: Vec<(Config, &str)> = vec![
        (with(&|c| c.nodes.clear()), "no nodes"),
        (
            with(&|c| {
                c.nodes = (0..10)
                    .map(|i| format!("redis://127.0.0.1:{}", 7000 + i))
                    .collect()
            }),
            "at most",
        ),
        (with(&|c| c.nodes.push(good.clone())), "listed twice"),
        (with(&|c| c.nodes.push(format!("{good}/0"))), "listed twice"),
        (with(&|c| c.nodes.push(format!("{good}/1"))), "listed twice"),
        (only("http://127.0.0.1:1"), "redis://"),
        (only("redis://127.0.0.1:notaport"), "host:port"),
        (only("redis://u:secret@127.0.0.1:1/x"), "database"),
        (
            only("redis-sentinel://u:secret@127.0.0.1:1"),
            "sentinelServiceName",
        ),
        (only("redis-cluster://127.0.0.1:1/2"), "database 0"),
        (
            only("redis://127.0.0.1:1?node=127.0.0.1:2"),
            "query parameter",
        ),
        (with(&|c| c.drift_factor = 1.0), "drift_factor"),
        (with(&|c| c.drift_factor = -0.1), "drift_factor"),
        (with(&|c| c.drift_factor = f64::NAN), "drift_factor"),
        (
            with(&|c| c.min_validity_factor = 1.5),
            "min_validity_factor",
        ),
        (
            with(&|c| c.node_timeout = Some(Duration::ZERO)),
            "node_timeout",
        ),
        (with(&|c| c.max_ttl = Duration::ZERO), "max_ttl"),
        (with(&|c| c.max_pending = 0), "max_pending"),
    ];
    for (config, expected) in cases {
        let why = invalid_config(Redlock::new(config).await);
        assert!(
            why.contains(expected),
            "{why:?} should mention {expected:?}"
        );
        assert!(
            !why.contains("secret"),
            "a password leaked into an error: {why}"
        );
    }
}

#[tokio::test]
async fn bad_ttls_and_resources_are_rejected() {
    let cluster = nodes(1);
    each_transport(urls(&cluster), async |_transport, [e]| {
        let long = vec![b'x'; 1025];
        let bad: Vec<(&[u8], Duration)> = vec![
            (b"r", Duration::ZERO),
            (b"r", Duration::from_micros(999)),
            (b"r", Duration::from_secs(24 * 3600 + 1)),
            (b"r", Duration::MAX),
            (b"", Duration::from_secs(1)),
            (&long, Duration::from_secs(1)),
        ];
        for (resource, ttl) in bad {
            for result in [
                e.acquire(resource, ttl).await,
                e.try_acquire(resource, ttl).await,
            ] {
                assert!(
                    matches!(result, Err(LockError::InvalidInput(_))),
                    "{ttl:?}: {result:?}"
                );
            }
        }
        // a resource of exactly the cap is fine
        let lock = e
            .acquire(&long[..1024], Duration::from_secs(1))
            .await
            .unwrap();
        let mut lock2 = e.acquire(b"ok", Duration::from_secs(1)).await.unwrap();
        assert!(matches!(
            e.extend(&mut lock2, Duration::ZERO).await,
            Err(LockError::InvalidInput(_))
        ));
        assert!(matches!(
            e.extend(&mut lock2, Duration::MAX).await,
            Err(LockError::InvalidInput(_))
        ));
        e.release(lock).await.unwrap();
        e.release(lock2).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_ttl_not_above_the_node_timeout_is_rejected() {
    let cluster = nodes(1);
    let e = engine_with(&cluster, |b| b.node_timeout(Duration::from_millis(100))).await;
    let err = e
        .try_acquire(b"r", Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(
        matches!(err, LockError::InvalidInput(ref why) if why.contains("node timeout")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_key_of_another_type_counts_as_not_acquired() {
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |_transport, [e]| {
        for node in &cluster {
            node.cmd(&[b"RPUSH", b"redlock:{typed}", b"x"]);
        }
        let err = e
            .try_acquire(b"typed", Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(matches!(err, LockError::Contended { .. }), "{err:?}");
        for node in &cluster {
            assert_eq!(
                node.cmd(&[b"TYPE", b"redlock:{typed}"]),
                "list",
                "the list is untouched"
            );
        }
        // a lock whose key was replaced by a list: release and extend say "not owner", no error leaks
        for node in &cluster {
            node.cmd(&[b"DEL", b"redlock:{typed}"]);
        }
        let mut lock = e.acquire(b"typed", Duration::from_secs(5)).await.unwrap();
        for node in &cluster {
            node.cmd(&[b"DEL", b"redlock:{typed}"]);
            node.cmd(&[b"RPUSH", b"redlock:{typed}", b"x"]);
        }
        assert!(matches!(
            e.extend(&mut lock, Duration::from_secs(5)).await,
            Err(LockError::NotOwner)
        ));
        assert!(matches!(e.release(lock).await, Err(LockError::NotOwner)));
        for node in &cluster {
            node.cmd(&[b"DEL", b"redlock:{typed}"]);
        }
    })
    .await;
}

#[tokio::test]
async fn unreachable_nodes_fail_fast_without_a_false_acquire() {
    let e = engine(
        vec![
            crate::common::dead_url(),
            crate::common::dead_url(),
            crate::common::dead_url(),
        ],
        Default::default(),
    )
    .await;
    assert_eq!(e.connected_nodes(), 0);
    let started = std::time::Instant::now();
    let err = e
        .try_acquire(b"nowhere", Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "{:?}",
        started.elapsed()
    );
    match err {
        LockError::QuorumNotReached {
            ok: 0,
            needed: 2,
            failures,
        } => assert!(failures.len() >= 2),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn lock_debug_never_shows_the_value() {
    let (cluster, [e]) = quick_nodes(1).await;
    let lock = e
        .acquire(b"secret-holder", Duration::from_secs(5))
        .await
        .unwrap();
    let stored = cluster[0].cmd(&[b"GET", b"redlock:{secret-holder}"]);
    let shown = format!("{lock:?} {e:?}");
    assert!(!shown.contains(&stored), "Debug leaked the lock value");
    assert!(shown.contains("secret-holder"));
    e.release(lock).await.unwrap();
}

#[cfg(feature = "fred")]
#[tokio::test]
async fn a_node_its_transport_cannot_serve_is_a_node_error() {
    // fred takes database indexes up to 255 only: that node can never be served, so building fails
    // and names it, instead of an engine whose node fails every command.
    let config = Config {
        transport: redlock_engine::Transport::Fred,
        connect_timeout: Duration::from_millis(50),
        ..crate::common::fresh_config(vec![
            "redis://127.0.0.1:1".into(),
            "redis://127.0.0.1:2/300".into(),
        ])
    };
    match Redlock::new(config).await {
        Err(err @ LockError::Node { index: 1, .. }) => {
            assert!(err.to_string().contains("255"), "{err}");
            assert!(std::error::Error::source(&err).is_some());
        }
        other => panic!("expected LockError::Node for node 1, got {other:?}"),
    }
}
