//! The guide's minimal ACLs (docs/guide.md), read from the guide itself: the tests run against a
//! user with exactly the rules a reader is told to give, and a change to either list shows in them.

const GUIDE: &str = include_str!("../../../docs/guide.md");

/// The rules of the first code span after `marker` in the guide, word by word.
///
/// # Panics
/// If the guide has no such marker or no code span after it.
fn guide_acl(marker: &str) -> Vec<&'static str> {
    let after = GUIDE
        .split_once(marker)
        .unwrap_or_else(|| panic!("docs/guide.md has no {marker:?}"))
        .1;
    let span = after
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("docs/guide.md: no ACL after {marker:?}"));
    span.split_whitespace().collect()
}

/// The guide's lock user ("Minimal ACL"): its keys, its channels and the commands a lock needs.
pub fn lock_user() -> Vec<&'static str> {
    guide_acl("A lock user needs only")
}

/// The guide's read-only inspecting user: its keys and commands.
pub fn inspect_user() -> Vec<&'static str> {
    guide_acl("Minimal ACL for a read-only inspecting user")
}

/// The commands of `rules` (`+...`), without their key and channel patterns.
pub fn commands(rules: Vec<&'static str>) -> Vec<&'static str> {
    rules.into_iter().filter(|r| r.starts_with('+')).collect()
}

#[test]
fn the_guides_acls_are_found() {
    let lock = lock_user();
    assert_eq!(lock[..2], ["~redlock:*", "&redlock:*"], "{lock:?}");
    assert!(
        lock.contains(&"+evalsha") && lock.contains(&"+unsubscribe"),
        "{lock:?}"
    );
    let inspect = inspect_user();
    assert_eq!(inspect[0], "~redlock:*", "{inspect:?}");
    assert!(
        inspect.contains(&"+zrangebyscore") && !inspect.contains(&"+set"),
        "{inspect:?}"
    );
}
