//! Tests of the list of kinds through the catalog derived from it (`crate::protocol::catalog`): they
//! take the real list, so they live with it, above the layers they test. The probe (`kinds::probe`),
//! a kind only the tests list, proves that adding a kind is its file and its line in the list.

use std::time::Duration;

use crate::algo::retry::Wait;
use crate::kinds::probe::{ACQUIRE_PROBE, PROBE};
use crate::protocol::spec::{Kind, LockKind};
use crate::Redlock;

/// Each kind draws values with its own code: two kinds with one code would read as one. None keeps
/// the placeholders of `kinds::base::BASE`.
#[test]
fn every_kind_has_its_own_code_and_name() {
    let catalog = super::catalog();
    let kinds = catalog.kinds();
    for (i, a) in kinds.iter().enumerate() {
        assert!(
            !a.name.is_empty() && a.code != 0,
            "a kind without its own name or code"
        );
        assert!(!a.scripts.is_empty(), "{}: its scripts", a.name);
        for b in &kinds[i + 1..] {
            assert_ne!(a.code, b.code, "{} and {}", a.name, b.name);
            assert_ne!(a.name, b.name);
        }
        assert_eq!(catalog.by_code(a.code), Some(LockKind::of(a)));
    }
}

/// Each script's `sha1` is its source's digest: `EVALSHA` sends the constant, and a stale one
/// is a `NOSCRIPT` at best (the handshake's `SCRIPT LOAD` check catches it on real nodes too).
#[test]
fn every_script_digest_matches_its_source() {
    let wrong: Vec<String> = super::catalog()
        .scripts()
        .iter()
        .filter_map(|script| {
            let digest = sha1_smol::Sha1::from(script.source).digest().to_string();
            (script.sha1 != digest).then(|| format!("{} -> {digest}", script.source))
        })
        .collect();
    assert!(wrong.is_empty(), "stale digests:\n{}", wrong.join("\n"));
}

#[test]
fn the_catalog_derives_everything_for_a_new_kind() {
    let catalog = super::catalog();
    assert!(catalog
        .scripts()
        .iter()
        .any(|s| s.sha1 == ACQUIRE_PROBE.sha1));
    assert!(catalog.keys().iter().any(|k| k.name == b":probe"));
    assert_eq!(catalog.by_code(b't'), Some(LockKind::of(&PROBE)));
    assert!(catalog.forced().counted.contains(&&b":probe"[..]));
}

/// On a real node: the probe is acquired through the engine's wait loop, inspect names it,
/// and force-release deletes and counts both of its keys.
#[tokio::test]
async fn inspect_and_force_release_handle_a_kind_they_never_name() {
    let node = testkit::RedisNode::start();
    let redlock = Redlock::builder()
        .nodes([node.url()])
        .quarantine(false)
        .build()
        .await
        .expect("engine");
    let core = redlock.core();
    let target = core.target(Kind::new(&PROBE, 0), b"r").unwrap();
    let lock = core
        .acquire(target, Duration::from_secs(10), Wait::Once)
        .await;
    let _held = lock.expect("probe acquired");
    let seen = redlock.inspect("r").await.unwrap();
    let state = seen.nodes[0].state.as_ref().expect("node answered");
    assert_eq!(state.kind.map(LockKind::name), Some("probe"));
    assert!(state.held && state.ours);
    let forced = redlock.force_release("r").await.unwrap();
    assert_eq!(
        forced.nodes[0].as_ref().ok(),
        Some(&2),
        "lock key and :probe key"
    );
    let after = redlock.inspect("r").await.unwrap();
    assert!(!after.nodes[0].state.as_ref().unwrap().held);
}
