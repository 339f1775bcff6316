//! `rediss://`: both transports over TLS to a TLS-only node with a self-signed CA made in
//! the test setup; a wrong CA fails the handshake with a clear error, never a grant.

use std::time::Duration;

use crate::common::{tls_material, transports, RedisNode};
use redlock_engine::{Config, LockError, NodeError, Redlock};

fn tls_node() -> (RedisNode, u16, std::path::PathBuf, std::path::PathBuf) {
    let (dir, ca, cert, key) = tls_material();
    // TLS only: no plain-text port at all.
    let node = RedisNode::start_tls_only(&[
        "--tls-cert-file",
        &cert.to_string_lossy(),
        "--tls-key-file",
        &key.to_string_lossy(),
        "--tls-ca-cert-file",
        &ca.to_string_lossy(),
        "--tls-auth-clients",
        "no",
    ]);
    let port = node.port;
    (node, port, ca, dir)
}

#[tokio::test]
async fn locks_over_tls_with_the_test_ca() {
    if !testkit::server::skip_unless(
        "tls::locks_over_tls_with_the_test_ca",
        testkit::server::Needs::Tls,
    ) {
        return;
    }
    let (_node, port, ca, _dir) = tls_node();
    for transport in transports() {
        let e = Redlock::new(Config {
            nodes: vec![format!("rediss://127.0.0.1:{port}")],
            tls_ca_file: Some(ca.clone()),
            transport,
            ..crate::common::fresh_config()
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
    if !testkit::server::skip_unless(
        "tls::an_untrusted_certificate_fails_the_node_not_the_caller",
        testkit::server::Needs::Tls,
    ) {
        return;
    }
    let (_node, port, _ca, _dir) = tls_node();
    for transport in transports() {
        // The default root set does not trust the test CA.
        let e = Redlock::new(Config {
            nodes: vec![format!("rediss://127.0.0.1:{port}")],
            retry_count: 0,
            transport,
            ..crate::common::fresh_config()
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
        nodes: vec!["rediss://127.0.0.1:1".into()],
        tls_ca_file: Some("/nonexistent/ca.pem".into()),
        ..crate::common::fresh_config()
    })
    .await;
    assert!(
        matches!(missing, Err(LockError::InvalidConfig(ref why)) if why.contains("tls_ca_file")),
        "{missing:?}"
    );
}
