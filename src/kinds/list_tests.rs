//! Tests of the list of kinds through the catalog derived from it (`crate::protocol::catalog`): they
//! take the real list, so they live here, above the layers they test.

use crate::protocol::spec::LockKind;

/// Each kind draws values with its own code: two kinds with one code would read as one.
#[test]
fn every_kind_has_its_own_code_and_name() {
    let catalog = super::catalog();
    let kinds = catalog.kinds();
    for (i, a) in kinds.iter().enumerate() {
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
