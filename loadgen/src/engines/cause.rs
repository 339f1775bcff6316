//! Failure causes as map keys: the engine's error variant name, found generically, plus the node causes
//! of a failed quorum. Counted per cause (never stored one by one), so the key set must stay small.
//!
//! The name is read from the error's `Debug` text (the part before the first ` `, `{` or `(`), not from a
//! `match` on the variants: `LockError` is `#[non_exhaustive]`, and a variant added later (such as
//! `Overloaded`) must show up under its own name in a run of the new engine without a loadgen change.

use std::collections::BTreeSet;
use std::sync::Mutex;

use redlock_engine::LockError;

/// The cause name of an engine error: `Contended`, `ContendedLocal` (gave up in the in-process queue),
/// `QuorumNotReached(timed out)` (with the distinct node causes, sorted, comma-separated), `Timeout`, …
pub fn of(err: &LockError) -> &'static str {
    match err {
        // Same variant, different story: the attempt never reached the nodes.
        LockError::Contended { local: true, .. } => "ContendedLocal",
        LockError::QuorumNotReached { failures, .. } => {
            // Which node failure made the quorum fail is the point of the overload scenarios (a
            // queueing delay turned into "timed out"), so it is part of the key; distinct causes
            // only, to keep it small.
            let causes: BTreeSet<String> = failures.iter().map(|(_, e)| e.to_string()).collect();
            let causes: Vec<String> = causes.into_iter().collect();
            intern(&format!("QuorumNotReached({})", causes.join(",")))
        }
        other => intern(variant_name(&format!("{other:?}"))),
    }
}

/// The variant name at the start of a `Debug` text: `Timeout { attempts: 3 }` → `Timeout`.
pub fn variant_name(debug: &str) -> &str {
    let end = debug.find([' ', '{', '(']).unwrap_or(debug.len());
    &debug[..end]
}

/// Failure causes are `&'static str` in the stats maps (cheap to count); the few distinct names met at
/// run time are leaked once each.
pub fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::*;
    use redlock_engine::NodeError;

    #[test]
    fn names_come_from_the_variant() {
        assert_eq!(variant_name("Timeout { attempts: 3 }"), "Timeout");
        assert_eq!(variant_name("Random(\"x\")"), "Random");
        assert_eq!(variant_name("NotOwner"), "NotOwner");
        assert_eq!(variant_name("Overloaded"), "Overloaded");
        assert_eq!(
            of(&LockError::Timeout {
                attempts: 2,
                last: None,
            }),
            "Timeout"
        );
        assert_eq!(of(&LockError::NotOwner), "NotOwner");
        assert_eq!(
            of(&LockError::Contended {
                taken: 0,
                nodes: 5,
                local: true,
                retry_after: None,
                holder: None,
            }),
            "ContendedLocal"
        );
        assert_eq!(
            of(&LockError::Contended {
                taken: 3,
                nodes: 5,
                local: false,
                retry_after: None,
                holder: None,
            }),
            "Contended"
        );
    }

    #[test]
    fn a_failed_quorum_names_its_node_causes() {
        let err = LockError::QuorumNotReached {
            ok: 1,
            needed: 3,
            failures: vec![
                (0, NodeError::Timeout),
                (1, NodeError::Backpressure),
                (2, NodeError::Timeout),
            ],
        };
        assert_eq!(of(&err), "QuorumNotReached(request queue full,timed out)");
        assert!(std::ptr::eq(of(&err), of(&err)), "interned once");
    }
}
