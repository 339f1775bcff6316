//! `rediss://`: both transports over TLS to a TLS-only node with a self-signed CA made in
//! the test setup; a wrong CA fails the handshake with a clear error, never a grant.

use std::time::Duration;

use crate::common::{skip_unless, tls_node, transports};
use redlock_engine::{Config, LockError, NodeError, Redlock};

#[tokio::test]
async fn locks_over_tls_with_the_test_ca() {
    skip_unless!(Tls);
    let (node, ca, _dir) = tls_node();
    let port = node.port;
    for transport in transports() {
        let e = Redlock::new(Config {
            tls_ca_file: Some(ca.clone()),
            transport,
            ..crate::common::fresh_config(vec![format!("rediss://127.0.0.1:{port}")])
        })
        .await
        .unwrap();
        assert_eq!(e.connected_nodes(), 1, "{transport:?}");
        let mut lock = e
            .acquire(b"over-tls", Duration::from_secs(5))
            .await
            .unwrap();
        e.extend(&mut lock, Duration::from_secs(5)).await.unwrap();
        e.release(lock).await.unwrap();
    }
}

#[tokio::test]
async fn an_untrusted_certificate_fails_the_node_not_the_caller() {
    skip_unless!(Tls);
    let (node, _ca, _dir) = tls_node();
    let port = node.port;
    for transport in transports() {
        // The default root set does not trust the test CA.
        let e = Redlock::new(Config {
            retry_count: 0,
            transport,
            ..crate::common::fresh_config(vec![format!("rediss://127.0.0.1:{port}")])
        })
        .await
        .unwrap();
        assert_eq!(e.connected_nodes(), 0);
        match e.acquire(b"over-tls", Duration::from_secs(5)).await {
            Err(LockError::QuorumNotReached { failures, .. }) => {
                // The caller learns why: the node's address and the failed certificate check.
                assert!(
                    matches!(&failures[0].1, NodeError::Connect(why)
                        if why.contains("127.0.0.1") && why.to_lowercase().contains("certificate")),
                    "{transport:?}: {failures:?}"
                )
            }
            other => panic!("{transport:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_bad_ca_file_is_a_configuration_error() {
    let missing = Redlock::new(Config {
        tls_ca_file: Some("/nonexistent/ca.pem".into()),
        ..crate::common::fresh_config(vec!["rediss://127.0.0.1:1".into()])
    })
    .await;
    assert!(
        matches!(missing, Err(LockError::InvalidConfig(ref why)) if why.contains("tls_ca_file")),
        "{missing:?}"
    );
}
