//! A kind that exists only in the tests, to prove that adding a kind is its file plus its line in
//! `KINDS`: nothing else in the crate names it, yet the handshake loads its script, inspect names
//! it and force-release deletes its extra key.

use crate::algo::quorum::Vote;
use crate::algo::retry::Wait;
use crate::algo::value::LockValue;
use crate::protocol::cmd::{Args, Cmd, Keys, Script};
use crate::protocol::scripts::{EXTEND, HOLDS, RELEASE};
use crate::protocol::spec::{majority, script_cmd, Forced, Spec, Suffix};

/// The probe: an exclusive lock that also sets `prefix{resource}:probe`.
pub(crate) static PROBE: Spec = Spec {
    name: "probe",
    code: b't',
    acquire: acquire_probe,
    vote: Vote::of_script,
    quorum: majority,
    release: &RELEASE,
    release_notify: &RELEASE,
    extend: &EXTEND,
    holds: &HOLDS,
    extends_first_key: false,
    give_up: None,
    suffixes: &[Suffix {
        name: b":probe",
        forced: Forced::Counted,
    }],
    marks: &[],
    labeled: None,
    acquire_labeled: None,
    queues_locally: false,
    hands_off: false,
    handoff: None,
    successor: None,
    multi_resource: false,
    shared: false,
    scripts: &[&ACQUIRE_PROBE],
};

/// `SET NX PX` on the lock key and, when it lands, the probe key for as long. Answers 1 or -1.
static ACQUIRE_PROBE: Script = Script {
    source: "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then \
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2]) return 1 end return -1",
    sha1: "7f359c5a16749accd2c43fdbea8e58a7d6075521",
    resend: false,
};

fn acquire_probe(keys: &Keys, value: LockValue, ttl_ms: u64, _: u64) -> Cmd {
    script_cmd(&ACQUIRE_PROBE, keys, value, Args::of(&[ttl_ms]))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::protocol::spec::{Kind, LockKind};
    use crate::Redlock;

    #[test]
    fn the_catalog_derives_everything_for_a_new_kind() {
        let catalog = crate::kinds::catalog();
        assert!(catalog
            .scripts()
            .iter()
            .any(|s| s.sha1 == ACQUIRE_PROBE.sha1));
        assert!(catalog.keys().iter().any(|k| k.name == b":probe"));
        assert_eq!(catalog.by_code(b't'), Some(LockKind::of(&PROBE)));
        assert!(catalog.forced().counted.contains(&&b":probe"[..]));
    }

    /// On a real node: the probe is acquired through the engine's attempt loop, inspect names it,
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
}
