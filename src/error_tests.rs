//! `LockError`'s classes, retryability and messages, for every variant.

use super::*;

/// One of every variant. The `match` has no wildcard: a new variant does not compile until it
/// is listed here with its class.
fn every_variant() -> Vec<(LockError, ErrorClass)> {
    let all = vec![
        LockError::Contended {
            taken: 2,
            nodes: 3,
            local: false,
            retry_after: None,
            holder: None,
        },
        LockError::QuorumNotReached {
            ok: 1,
            needed: 2,
            failures: vec![(0, NodeError::Timeout)],
        },
        LockError::ValidityExpired {
            left: Duration::ZERO,
            min: Duration::from_millis(1),
        },
        LockError::NotOwner,
        LockError::AlreadyExpired,
        LockError::FenceNotCommitted { rounds: 3 },
        LockError::PermitsMismatch {
            permits: 2,
            found: 3,
        },
        LockError::Lost,
        LockError::Node {
            index: 0,
            source: NodeError::Connect("x".into()),
        },
        LockError::Overloaded {
            waited: Duration::from_millis(5),
        },
        LockError::Timeout {
            attempts: 3,
            last: None,
        },
        LockError::Random("x".into()),
        LockError::InvalidConfig("x".into()),
        LockError::InvalidInput("x".into()),
        LockError::Closed,
    ];
    all.into_iter()
        .map(|e| {
            let class = match &e {
                LockError::Contended { .. } | LockError::Timeout { last: None, .. } => {
                    ErrorClass::Busy
                }
                LockError::QuorumNotReached { .. }
                | LockError::ValidityExpired { .. }
                | LockError::FenceNotCommitted { .. }
                | LockError::Overloaded { .. }
                | LockError::Random(_) => ErrorClass::Unavailable,
                LockError::Timeout { last: Some(_), .. } => unreachable!("listed below"),
                LockError::NotOwner | LockError::AlreadyExpired | LockError::Lost => {
                    ErrorClass::Lost
                }
                LockError::PermitsMismatch { .. }
                | LockError::Node { .. }
                | LockError::InvalidConfig(_)
                | LockError::InvalidInput(_)
                | LockError::Closed => ErrorClass::Invalid,
            };
            (e, class)
        })
        .collect()
}

#[test]
fn every_variant_sorts_into_one_class_matching_is_retryable() {
    for (error, class) in every_variant() {
        assert_eq!(error.class(), class, "{error:?}");
        let retry = matches!(class, ErrorClass::Busy | ErrorClass::Unavailable);
        assert_eq!(error.is_retryable(), retry, "{error:?}");
        assert_eq!(error.is_busy(), class == ErrorClass::Busy);
        assert_eq!(error.is_unavailable(), class == ErrorClass::Unavailable);
        assert!(!error.to_string().is_empty());
    }
    // A timeout sorts as its last attempt did.
    for (last, class) in every_variant() {
        let timeout = LockError::Timeout {
            attempts: 1,
            last: Some(Box::new(last)),
        };
        assert_eq!(timeout.class(), class);
    }
}

#[test]
fn a_young_node_says_what_to_do() {
    let text = NodeError::Quarantined.to_string();
    assert!(
        text.contains("max_ttl") && text.contains("quarantine(false)"),
        "{text}"
    );
}
