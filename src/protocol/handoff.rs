//! The cross-process hand-off of the plain lock (issue 29): a release that finds a waiter in another
//! process leaves the key to exactly that waiter for a moment, and wakes only it.
//!
//! # How
//! Per node, beside the lock key `K`: the waiter list `K:wait` (the waiter mark, now a list of wake
//! names, oldest first; the plain mark's `EXISTS` still reads it). A wake name is a random `u64`
//! drawn once per process and resource (the local queue's: whichever task heads that queue answers
//! to it), or per acquire call without a local queue (decimal; not a secret, it is published). So a
//! list holds at most one name per waiting process, and a process's next head keeps its place.
//! - **Take-over** ([`TAKE_OVER`], an acquire): sets `K` to the waiter's fresh value when `K` is
//!   free **or holds the reservation `r<name>` of this waiter**, and then drops its name from the
//!   list; otherwise it appends the name (once) and keeps the list alive. One command both tries and
//!   marks, atomically: a release after it always sees the mark (the old "lost, then mark" window
//!   is gone).
//! - **Unmark** ([`UNMARK`]): a waiter that won its take-over drops its name where the take-over
//!   did not run as a grant (a node that refused it, or that it reached before the release).
//! - **Release to a known waiter** ([`RELEASE_TO`]): a take-over that wins answers the name of the
//!   list's head after it (the next waiter); the holder's release then reserves for that one name
//!   on every node, whatever order each node's list has.
//! - **Hand-off release** ([`RELEASE_HANDOFF`], for a holder that knows no name): owner-checked like `RELEASE`; when the list has a
//!   name it pops the oldest, replaces our value with the reservation `r<name>` for a short time
//!   (`ARGV[2]` ms) and publishes the name on `K`'s channel (a named wake: only that waiter's
//!   subscription wakes). Answers 2 (handed off), 1, 0 or -1 as `RELEASE_NOTIFY` does.
//!
//! # Why it is safe
//! - *Mutual exclusion is SET NX's.* A reservation is no one's lock: no `Lock` is ever returned for
//!   it, and it is only ever written by the holder's owner-checked release, in place of a value that
//!   was being deleted. A take-over writes a value only where `K` is free or holds nothing but a
//!   reservation, so on every node it replaces no live lock — exactly the cases where `SET NX` would
//!   have written (plus a key nobody holds). Two clients can thus hold a majority at the same time
//!   no more than with `SET NX`.
//! - *Quorum and validity are the attempt's.* A take-over is an ordinary attempt round: its value is
//!   fresh, the clock starts before it is queued, the lock is granted only on a majority with
//!   validity left, and a lost round releases its value on every node.
//! - *No replay.* `TAKE_OVER` is acquire-side (`resend: false`); `RELEASE_HANDOFF` is owner-checked
//!   (a second copy finds our value gone and changes nothing), so its `NOSCRIPT` resend is safe.
//! - *Liveness.* A reservation for a waiter that died or gave up expires on its own (`ARGV[2]`, one
//!   node timeout); the key is then free to anyone's `SET NX` or take-over. Names whose waiter left
//!   stay in the list until popped (one short reservation each) or until the list expires.
//!
//! Fairness across processes: only queue heads mark, so the list holds at most one name per
//! process and is served oldest first; a process that just held the lock joins the back.

use super::cmd::{Args, Cmd, Keys, NodeResult, Reply, Script};
use super::spec::script_cmd;
use crate::algo::quorum::Vote;
use crate::algo::value::LockValue;

/// A kind's cross-process hand-off (`Spec::handoff`): its take-over acquire and its release.
#[derive(Debug)]
pub(crate) struct Handoff {
    pub(crate) take_over: &'static Script,
    pub(crate) release: &'static Script,
    pub(crate) release_to: &'static Script,
    pub(crate) unmark: &'static Script,
}

/// The single-key exclusive lock's hand-off.
pub(crate) static PLAIN_HANDOFF: Handoff = Handoff {
    take_over: &TAKE_OVER,
    release: &RELEASE_HANDOFF,
    release_to: &RELEASE_TO,
    unmark: &UNMARK,
};

/// Take-over: KEYS = `K`; ARGV = value, TTL ms, wake name, list TTL ms. Answers -1 (taken), or when
/// set the name of the list's new head (the next waiter; names are at least 2 and below 2^53, so a
/// Lua number holds them exactly), or 1 when nobody else waits. A string mark of an older client at `K:wait` (`pcall`: `WRONGTYPE`) is replaced by the
/// list.
pub(crate) static TAKE_OVER: Script = Script {
    source:
        "local v = redis.call('GET', KEYS[1]) local q = KEYS[1] .. ':wait' if v == false or v == \
'r' .. ARGV[3] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) \
redis.pcall('LREM', q, 1, ARGV[3]) local h = redis.pcall('LINDEX', q, 0) if type(h) == \
'string' then return tonumber(h) or 1 end return 1 end local at = redis.pcall('LPOS', q, \
ARGV[3]) if type(at) == 'table' then redis.call('DEL', q) at = false end if not at then \
redis.call('RPUSH', q, ARGV[3]) end redis.call('PEXPIRE', q, ARGV[4]) return -1",
    sha1: "daf78ab91aebfaa4b544a33b3a4af5e962eedab9",
    resend: false,
};

/// Hand-off release to a known waiter: KEYS = `K`; ARGV = value, reservation ms, the waiter's name
/// (what the holder's take-over learned: the list's head when it was granted), `1` to publish the
/// name (`0`: a lost take-over keeping its own place, which must not wake itself). Every node reserves
/// for that one name, so the hand-off never splits between waiters the nodes' lists order
/// differently. Answers 2 (handed off), 0 or -1 as [`RELEASE_HANDOFF`].
pub(crate) static RELEASE_TO: Script = Script {
    source:
        "local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then redis.pcall('LREM', KEYS[1] .. \
':wait', 1, ARGV[3]) redis.call('SET', KEYS[1], 'r' .. ARGV[3], 'PX', ARGV[2]) if \
ARGV[4] == '1' then redis.call('PUBLISH', KEYS[1], ARGV[3]) end return 2 elseif v == \
false then return 0 else return -1 end",
    sha1: "98ca1b7b02959807ecf38096c13cd6a4f8d53852",
    resend: true,
};

/// Hand-off release: KEYS = `K`; ARGV = value, reservation ms. A string mark (an older client's)
/// is a waiter without a name: the key is deleted and everyone is woken, as by `RELEASE_NOTIFY`.
pub(crate) static RELEASE_HANDOFF: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v == ARGV[1] then local n = redis.pcall('LPOP', KEYS[1] .. ':wait') \
if type(n) == 'string' then redis.call('SET', KEYS[1], 'r' .. n, 'PX', ARGV[2]) \
redis.call('PUBLISH', KEYS[1], n) return 2 end \
redis.call('DEL', KEYS[1]) \
if n then redis.call('PUBLISH', KEYS[1], '') return 2 end return 1 \
elseif v == false then return 0 else return -1 end",
    sha1: "1a4e81d800e1c7a441231cc6ea42783d6ad630ee",
    resend: true,
};

/// Unmark: KEYS = `K`; ARGV = (unused value), wake name. Drops the name from the list: sent by a
/// waiter that won its take-over to the nodes that did not grant it, so no node keeps a name nobody
/// answers to (the lists stay one entry per waiting process, in the same order on every node).
pub(crate) static UNMARK: Script = Script {
    source: "redis.pcall('LREM', KEYS[1] .. ':wait', 1, ARGV[2]) return 1",
    sha1: "d15497cd4e84cd3c25354f1d6806aa76f3e60ac7",
    resend: true,
};

impl Handoff {
    /// Drops the waiter named `name` from the list (see [`UNMARK`]).
    pub(crate) fn unmark_cmd(&self, keys: &Keys, name: u64) -> Cmd {
        script_cmd(
            self.unmark,
            &Keys::One(keys.as_slice()[0].clone()),
            LockValue::ZERO,
            Args::of(&[name]),
        )
    }

    /// A take-over attempt of the waiter named `name`, marking it for `mark_ms` if it loses.
    pub(crate) fn take_over_cmd(
        &self,
        keys: &Keys,
        value: LockValue,
        ttl_ms: u64,
        name: u64,
        mark_ms: u64,
    ) -> Cmd {
        script_cmd(
            self.take_over,
            &Keys::One(keys.as_slice()[0].clone()),
            value,
            Args::of(&[ttl_ms, name, mark_ms]),
        )
    }

    /// The release that reserves the key for the waiter named `name` for `reserve_ms`.
    pub(crate) fn release_to_cmd(
        &self,
        keys: &Keys,
        value: LockValue,
        reserve_ms: u64,
        name: u64,
        wake: bool,
    ) -> Cmd {
        script_cmd(
            self.release_to,
            &Keys::One(keys.as_slice()[0].clone()),
            value,
            Args::of(&[reserve_ms.max(1), name, u64::from(wake)]),
        )
    }

    /// The release that reserves the key for the oldest marked waiter for `reserve_ms`.
    pub(crate) fn release_cmd(&self, keys: &Keys, value: LockValue, reserve_ms: u64) -> Cmd {
        script_cmd(
            self.release,
            &Keys::One(keys.as_slice()[0].clone()),
            value,
            Args::of(&[reserve_ms.max(1)]),
        )
    }
}

/// Reads a take-over reply: granted (with the next waiter's name, see [`TAKE_OVER`]) or taken.
pub(crate) fn take_over_vote(result: NodeResult) -> Vote {
    match result {
        Ok(Reply::Int(name)) if name >= 2 => Vote::YesAt(name as u64),
        other => Vote::of_script(other),
    }
}

/// A fresh wake name: at least 2 (1 is the take-over's "nobody waits"), below 2^53 (exact in Lua).
pub(crate) fn new_name() -> u64 {
    fastrand::u64(2..1 << 53)
}

/// The subscription name a waiter named `name` is woken by (what the release publishes).
pub(crate) fn wake_name(name: u64) -> bytes::Bytes {
    bytes::Bytes::from(name.to_string())
}

#[cfg(test)]
#[path = "handoff_tests.rs"]
mod tests;
