//! The one list of kinds of lock the nodes can hold ([`KINDS`]), and the [`catalog`] derived from it
//! once: inspect's kind names, force-release's keys, the handshake's scripts and the codes in lock
//! values all come from here.

use std::sync::OnceLock;

use super::{exclusive, fair, fenced, multi, rwlock, semaphore};
use crate::protocol::catalog::Catalog;
use crate::protocol::spec::Spec;

/// Every kind of lock the nodes can hold: the one list.
static KINDS: &[&Spec] = &[
    &exclusive::EXCLUSIVE,
    &fenced::FENCED,
    &multi::MULTI,
    &rwlock::READ,
    &rwlock::WRITE,
    &semaphore::SEMAPHORE,
    &fair::FAIR,
    #[cfg(test)]
    &super::probe::PROBE,
];

/// The list of kinds as the engine receives it (built once).
pub(crate) fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::new(KINDS))
}

#[cfg(test)]
#[path = "list_tests.rs"]
mod tests;
