//! The cross-process hand-off of the plain lock: a release that finds a waiter in another
//! process leaves the key to exactly that waiter for a moment, and wakes only it.
//!
//! # How
//! Per node, beside the lock key `K`: the waiter list `K:wait` (the waiter mark, now a sorted set
//! of wake names; the plain mark's readers still find it), each name scored by the wall-clock µs
//! its waiter began waiting, so **every node orders the same waiters alike** (a node may lack a
//! name, never order two differently). A wake name is drawn from the engine's random tag and the
//! key, once per process and resource (whichever task heads the local queue answers to it, and its
//! subscription lingers from one wait to the next), or per acquire call without a local queue
//! (decimal; not a secret, it is published). So a list holds at most one name per waiting process.
//! A waiter is woken on its own channel, `K:h:<name>` ([`wake_channel`]): a release costs one
//! message per node, not one per process subscribed to the key.
//! - **Take-over** ([`TAKE_OVER`], an acquire): sets `K` to the waiter's fresh value when `K` is
//!   free **or holds the reservation `r<name>` of this waiter**, and then drops its name from the
//!   list where the key was free (a release that reserved the key took the name out already);
//!   otherwise it adds the name at its place (`ZADD NX`: a name already there keeps its
//!   older place) and keeps the list alive. One command both tries and marks, atomically: a
//!   release after it always sees the mark.
//! - **Step back** ([`STEP_BACK`]): a lost take-over's release. Where the round set our value, it
//!   becomes our reservation (only when a release named us for this attempt: the nodes the release
//!   has not reached yet will reserve for us too: the reservation is then our place there) or is
//!   deleted, and our name goes back at its place.
//! - **Unmark** ([`UNMARK`]): a waiter that won its take-over drops its name where the take-over
//!   did not run as a grant (a node that refused it, or that it reached before the release).
//! - **Release to a known waiter** ([`RELEASE_TO`]): a take-over that wins answers the name of the
//!   list's first after it (the next waiter); the holder's release then reserves for that one name
//!   on every node, whatever names each node's list lacks.
//! - **Hand-off release** ([`RELEASE_HANDOFF`], a contended holder that knows no name):
//!   owner-checked like `RELEASE`; when the list has a name it takes out the first, replaces our
//!   value with the reservation `r<name>` for a short time (`ARGV[2]` ms) and publishes on that
//!   waiter's channel. Answers 2 (handed off), 1, 0 or -1 as `RELEASE_NOTIFY` does.
//! - An uncontended holder's `RELEASE_NOTIFY` (coalescable) wakes the first name too, without a
//!   reservation (`crate::protocol::scripts::RELEASE_NOTIFY`); a node's native release, or an older
//!   client's, publishes an empty message on `K`'s channel, which every named waiter also hears.
//! - A round lost with some grants may be a three-way split nobody holds: the attempt loop retries
//!   it early, since no release will come.
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
//!   A step back's reservation replaces only our own value of a lost round, which no `Lock` was
//!   returned for: the same argument.
//! - *Liveness.* A reservation for a waiter that died or gave up expires on its own (`ARGV[2]`, at
//!   most one node timeout); the key is then free to anyone's `SET NX` or take-over. Names whose
//!   waiter left stay in the list until taken out (one short reservation each) or until the list
//!   expires.
//! - *Clocks.* The wall clock orders the list only: a host whose clock is off queues its waiters
//!   early or late (fairness), it never lets two clients hold the lock.
//!
//! Fairness across processes: only queue heads mark, so the list holds at most one name per
//! process and is served oldest first; a process that just held the lock joins the back.

use super::cmd::{script_cmd, Args, Cmd, Keys, NodeResult, Op, Reply, Script};
use crate::algo::quorum::Vote;
use crate::algo::value::LockValue;

/// A kind's cross-process hand-off (`Spec::handoff`): its take-over acquire and its release.
#[derive(Debug)]
pub(crate) struct Handoff {
    pub(crate) take_over: &'static Script,
    pub(crate) release: &'static Script,
    pub(crate) release_to: &'static Script,
    pub(crate) unmark: &'static Script,
    pub(crate) step_back: &'static Script,
}

/// The single-key exclusive lock's hand-off.
pub(crate) static PLAIN_HANDOFF: Handoff = Handoff {
    take_over: &TAKE_OVER,
    release: &RELEASE_HANDOFF,
    release_to: &RELEASE_TO,
    unmark: &UNMARK,
    step_back: &STEP_BACK,
};

/// Take-over: KEYS = `K`; ARGV = value, TTL ms, wake name, list TTL ms, place (µs). Answers -1
/// (taken), or when set the name of the list's new first (the next waiter; names are at least 2
/// and below 2^53, so a Lua number holds them exactly), or 1 when nobody else waits. A string mark
/// of an older client at `K:wait` (`pcall`: `WRONGTYPE`) is replaced by the list; a user the ACL
/// denies the sorted set commands leaves a string mark instead (its releases then wake everyone).
pub(crate) static TAKE_OVER: Script = Script {
    source:
        "local v = redis.call('GET', KEYS[1]) local q = KEYS[1] .. ':wait' if v == false or v == \
'r' .. ARGV[3] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) \
if v == false then redis.pcall('ZREM', q, ARGV[3]) end local h = redis.pcall('ZRANGE', q, 0, 0) if h.err == nil and \
h[1] then return tonumber(h[1]) or 1 end return 1 end local a = redis.pcall('ZADD', q, 'NX', \
ARGV[5], ARGV[3]) if type(a) == 'table' then redis.call('DEL', q) a = redis.pcall('ZADD', q, \
ARGV[5], ARGV[3]) if type(a) == 'table' then redis.call('SET', q, '1') end end \
redis.call('PEXPIRE', q, ARGV[4]) return -1",
    sha1: "702b1bd5d0e332370e3ab9402bece47cfc85b181",
    resend: false,
    op: Op::TakeOver,
};

/// Hand-off release to a known waiter: KEYS = `K`; ARGV = value, reservation ms, the waiter's name
/// (what the holder's take-over learned: the list's first name after it when it was granted). Every
/// node reserves for that one name, so the hand-off never splits between waiters a node's list
/// lacks. Answers 2 (handed off), 0 or -1 as [`RELEASE_HANDOFF`].
pub(crate) static RELEASE_TO: Script = Script {
    source:
        "local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then redis.pcall('ZREM', KEYS[1] .. \
':wait', ARGV[3]) redis.call('SET', KEYS[1], 'r' .. ARGV[3], 'PX', ARGV[2]) \
redis.call('PUBLISH', KEYS[1] .. ':h:' .. ARGV[3], ARGV[3]) return 2 elseif v == false then \
return 0 else return -1 end",
    sha1: "4e87ecd37590d2ff8f859985e512f3a8452cd1e3",
    resend: true,
    op: Op::ReleaseTo,
};

/// Hand-off release: KEYS = `K`; ARGV = value, reservation ms. A string mark (an older client's)
/// is a waiter without a name: the key is deleted and everyone is woken, as by `RELEASE_NOTIFY`.
pub(crate) static RELEASE_HANDOFF: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v == ARGV[1] then local n = redis.pcall('ZPOPMIN', KEYS[1] .. ':wait') \
if n.err == nil and n[1] then redis.call('SET', KEYS[1], 'r' .. n[1], 'PX', ARGV[2]) \
redis.call('PUBLISH', KEYS[1] .. ':h:' .. n[1], n[1]) return 2 end \
redis.call('DEL', KEYS[1]) \
if n.err then redis.call('PUBLISH', KEYS[1], '') return 2 end return 1 \
elseif v == false then return 0 else return -1 end",
    sha1: "9a787cf5a7e3d33a36daaee70e7c4d4bd8e126ac",
    resend: true,
    op: Op::ReleaseHandoff,
};

/// Step back, after a lost take-over round: KEYS = `K`; ARGV = value, reservation ms (0: none),
/// wake name, list TTL ms, place (µs). Where the round set our value, the key becomes our
/// reservation again (a waiter a release named: the nodes the release has not reached yet will
/// reserve it for us too; the reservation is our place on this node, so no name goes beside it and
/// the take-over it lets in has none to remove) or is deleted (anyone else: two waiters each keeping
/// what they got would refuse each other until their reservations expired, and no release would
/// wake either) and our name goes back in the list at its old place (the take-over took it out).
/// Answers 1, 0 (not set) or -1 (someone else's).
pub(crate) static STEP_BACK: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then if ARGV[2] == '0' then \
redis.call('DEL', KEYS[1]) local q = KEYS[1] .. ':wait' \
local a = redis.pcall('ZADD', q, 'NX', ARGV[5], ARGV[3]) if type(a) == 'number' then \
redis.call('PEXPIRE', q, ARGV[4]) end else redis.call('SET', KEYS[1], 'r' .. ARGV[3], 'PX', \
ARGV[2]) end return 1 elseif v == false then return 0 else return -1 end",
    sha1: "98142528f3c52684da5c2616f33b25817498c5e5",
    resend: true,
    op: Op::StepBack,
};

/// Unmark: KEYS = `K`; ARGV = (unused value), wake name. Drops the name from the list: sent by a
/// waiter that won its take-over to the nodes that did not grant it, so no node keeps a name nobody
/// answers to (the lists stay one entry per waiting process, in the same order on every node).
pub(crate) static UNMARK: Script = Script {
    source: "redis.pcall('ZREM', KEYS[1] .. ':wait', ARGV[2]) return 1",
    sha1: "340724a9ec39ef6a7134af045c074beac05c7194",
    resend: true,
    op: Op::Unmark,
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
        (mark_ms, since_us): (u64, u64),
    ) -> Cmd {
        script_cmd(
            self.take_over,
            &Keys::One(keys.as_slice()[0].clone()),
            value,
            Args::of(&[ttl_ms, name, mark_ms, since_us]),
        )
    }

    /// A lost take-over's step back (see [`STEP_BACK`]); `reserve_ms` 0 deletes.
    pub(crate) fn step_back_cmd(
        &self,
        keys: &Keys,
        value: LockValue,
        reserve_ms: u64,
        name: u64,
        (mark_ms, since_us): (u64, u64),
    ) -> Cmd {
        script_cmd(
            self.step_back,
            &Keys::One(keys.as_slice()[0].clone()),
            value,
            Args::of(&[reserve_ms, name, mark_ms, since_us]),
        )
    }

    /// The release that reserves the key for the waiter named `name` for `reserve_ms`.
    pub(crate) fn release_to_cmd(
        &self,
        keys: &Keys,
        value: LockValue,
        reserve_ms: u64,
        name: u64,
    ) -> Cmd {
        script_cmd(
            self.release_to,
            &Keys::One(keys.as_slice()[0].clone()),
            value,
            Args::of(&[reserve_ms.max(1), name]),
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

/// The channel the waiter named `name` is woken on, as the scripts compute it: its key, `:h:` and
/// the name. One per waiter, so a hand-off reaches only the process it names, not every subscriber
/// of the key (with 16 processes waiting, 16 messages per node and release otherwise).
pub(crate) fn wake_channel(key: &[u8], name: u64) -> bytes::Bytes {
    let mut channel = Vec::with_capacity(key.len() + 19);
    channel.extend_from_slice(key);
    channel.extend_from_slice(b":h:");
    channel.extend_from_slice(name.to_string().as_bytes());
    channel.into()
}

/// This process's wake name for `key`: the same for every wait of one engine on one key, so its
/// wake channel's subscription lingers from one wait to the next instead of being made again. The
/// engine's tag is random (a name is not a secret: it is published), so names of two processes
/// differ but by chance, and that only wakes the other one early.
pub(crate) fn stable_name(tag: &[u8], key: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (tag, key).hash(&mut h);
    2 + h.finish() % ((1 << 53) - 2)
}

#[cfg(test)]
#[path = "handoff_tests.rs"]
mod tests;
