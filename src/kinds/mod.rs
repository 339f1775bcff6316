//! Lock kinds, one file each: its commands, scripts and the `Redlock` methods that take it.
//!
//! - `exclusive`: one resource, one owner — the hot path, a plain `SET NX PX`; also the release and
//!   extend scripts the single-key kinds share, their coalesced extend, and the waiter mark.
//! - `fenced`: an exclusive lock with a fencing token ([`crate::Redlock::acquire_fenced`]).
//! - `fair`: an exclusive lock granted in arrival order across processes
//!   ([`crate::Redlock::acquire_fair`]: tickets from a majority's highest, a queue per node); its
//!   waiting loop is `fair_wait`.
//! - `multi`: several resources as one lock, all or none on each node.
//! - `rwlock`: read-write locks (many readers or one writer, writers first).
//! - `semaphore`: counting semaphores, at most K holders of a permit
//!   ([`crate::Redlock::acquire_permit`]); the one kind whose quorum is not a majority
//!   (`floor(K·N/(K+1)) + 1`, its `Spec::quorum`).
//! - `slots`: the slot semaphore, K exclusive locks on a majority ([`crate::Redlock::acquire_slot`]);
//!   not a kind of its own — a way of taking exclusive locks, like the three below.
//! - `renewed`: locks the watchdog keeps alive ([`crate::RenewedLock`], [`crate::RenewPolicy`]).
//! - `scoped`: acquire, run, release ([`crate::Redlock::with_lock`], [`crate::LockContext`]).
//! - `owner`: reentrant holds scoped to an owner ([`crate::LockOwner`]).
//! - `spec`: what the engine knows of a kind — its `Spec`, a lock's `Kind`, an acquire's `Target`.
//!
//! The first six are kinds of lock on the nodes: each is a `Spec` (`spec`: which command acquires,
//! which scripts release and extend, how it queues locally), listed once in [`KINDS`]. The engine never
//! asks which kind a lock is, only what its `Spec` says. `slots`, `renewed`, `scoped` and `owner` are ways of holding them.
//!
//! Adding a kind of lock: its file (a `Spec` and its public methods), its `mod` line, and its entry in
//! [`KINDS`].

use std::sync::OnceLock;

use crate::transport::Script;

pub(crate) mod exclusive;
pub(crate) mod fair;
mod fair_wait;
pub(crate) mod fenced;
pub(crate) mod multi;
pub(crate) mod owner;
pub(crate) mod renewed;
pub(crate) mod rwlock;
pub(crate) mod scoped;
pub(crate) mod semaphore;
pub(crate) mod slots;
pub(crate) mod spec;

use spec::Spec;

/// Every kind of lock the nodes can hold; each connection's handshake loads their scripts.
static KINDS: [&Spec; 7] = [
    &exclusive::EXCLUSIVE,
    &fenced::FENCED,
    &multi::MULTI,
    &rwlock::READ,
    &rwlock::WRITE,
    &semaphore::SEMAPHORE,
    &fair::FAIR,
];

/// Every script of every kind, once each: what each connection's handshake loads.
pub(crate) fn scripts() -> &'static [&'static Script] {
    static ALL: OnceLock<Vec<&'static Script>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<&'static Script> = Vec::new();
        for script in KINDS.iter().flat_map(|k| k.scripts) {
            if !all.iter().any(|s| s.sha1 == script.sha1) {
                all.push(script);
            }
        }
        all
    })
}

#[cfg(test)]
mod tests {
    /// Each script's `sha1` is its source's digest: `EVALSHA` sends the constant, and a stale one
    /// is a `NOSCRIPT` at best (the handshake's `SCRIPT LOAD` check catches it on real nodes too).
    #[test]
    fn every_script_digest_matches_its_source() {
        // Every kind's list, not the deduplicated one: `scripts()` keys on the constant itself.
        let wrong: Vec<String> = super::KINDS
            .iter()
            .flat_map(|k| k.scripts)
            .filter_map(|script| {
                let digest = sha1_smol::Sha1::from(script.source).digest().to_string();
                (script.sha1 != digest).then(|| format!("{} -> {digest}", script.source))
            })
            .collect();
        assert!(wrong.is_empty(), "stale digests:\n{}", wrong.join("\n"));
    }
}
