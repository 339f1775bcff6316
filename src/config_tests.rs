//! `Config::validate`'s refusals.

use super::*;
use crate::error::LockError;

fn one_node() -> Config {
    Config {
        nodes: vec!["redis://127.0.0.1:1".into()],
        ..Config::default()
    }
}

fn refused(config: Config) -> String {
    match config.validate() {
        Err(LockError::InvalidConfig(why)) => why,
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
}

#[test]
fn combinations_that_could_never_grant_a_lock_are_refused() {
    assert!(one_node().validate().is_ok());
    let why = refused(Config {
        drift_factor: 0.5,
        min_validity_factor: 0.5,
        ..one_node()
    });
    assert!(why.contains("drift_factor + min_validity_factor"), "{why}");
    let why = refused(Config {
        node_timeout: Some(Duration::from_secs(60)),
        ..one_node()
    });
    assert!(why.contains("below max_ttl"), "{why}");
}
