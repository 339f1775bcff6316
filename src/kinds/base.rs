//! What a kind is unless it says otherwise ([`BASE`]): the single-key exclusive lock's behaviour.
//! Each kind's `Spec` names what makes it that kind and takes the rest with `..BASE`, so a field
//! only one kind changes is written once, in that kind.

use crate::algo::quorum::Vote;
use crate::algo::value::LockValue;
use crate::protocol::cmd::{Cmd, Keys};
use crate::protocol::inspect::{ttl, InspectPart};
use crate::protocol::scripts::{EXTEND, HOLDS, RELEASE, RELEASE_NOTIFY, WAIT_MARK};
use crate::protocol::spec::{majority, Spec};

/// A single-key lock with one holder: the shared owner-checked scripts, a majority, the waiter
/// mark, queued and handed off locally, nothing more. `name`, `code`, `acquire` and `scripts` are
/// every kind's own (a test checks that no kind keeps the placeholders).
pub(crate) const BASE: Spec = Spec {
    name: "",
    code: 0,
    acquire: no_acquire,
    vote: Vote::of_script,
    quorum: majority,
    release: &RELEASE,
    release_notify: &RELEASE_NOTIFY,
    extend: &EXTEND,
    holds: &HOLDS,
    extends_first_key: true,
    give_up: None,
    suffixes: &[],
    marks: &[WAIT_MARK],
    labeled: None,
    acquire_labeled: None,
    queues_locally: true,
    hands_off: true,
    handoff: None,
    successor: None,
    multi_resource: false,
    shared: false,
    scripts: &[],
    inspect: &[&WAITERS],
};

/// Inspect's part for the waiter mark (`WAIT_MARK`, which every kind with the mark shares): its
/// time to live, `KeyState::waiters`.
pub(crate) static WAITERS: InspectPart = InspectPart {
    lua: "out[#out + 1] = pttl(K[':wait'])",
    fields: 1,
    read: |f, s| {
        s.waiters = ttl(f[0])?;
        Some(())
    },
};

/// The placeholder acquire: every kind names its own.
fn no_acquire(_: &Keys, _: LockValue, _: u64, _: u64) -> Cmd {
    unreachable!("every kind of the list names its acquire")
}
