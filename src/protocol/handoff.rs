//! The cross-process hand-off of the plain lock: a release that finds a waiter in another
//! process sets the key to that waiter's value, and tells only it.
//!
//! # How
//! Per node, beside the lock key `K`: the waiter list `K:wait` (the waiter mark, now a sorted set;
//! the plain mark's readers still find it). An entry is `<name>:<ttl ms>:<value>`: the waiter's wake
//! name, the TTL it asks for, and the value it waits with. A wait keeps one value until it steps
//! back; then it moves to the value's next **epoch**, the same value but for its last byte
//! (`LockValue::with_epoch`), so the nodes can tell an earlier value of the same wait from another
//! owner's. Each entry is scored by the wall-clock µs its waiter began waiting, so **every node
//! orders the same waiters alike** (a node may lack an entry, never order two differently), and all
//! entries of one wait share that score. A wake name is drawn from the engine's random tag and the
//! key, once per process and resource (whichever task heads the local queue answers to it, and its
//! subscription lingers from one wait to the next), or per acquire call without a local queue
//! (decimal; not a secret, it is published). A waiter is woken on its own channel, `K:h:<name>`
//! ([`wake_channel`]): a release costs one message per node, not one per process subscribed.
//! - **Grant by the release** (`grant_entry!` in `crate::protocol::grant`, run by
//!   [`RELEASE_HANDOFF`], [`RELEASE_TO`] and the uncontended `RELEASE_NOTIFY`): owner-checked like
//!   `RELEASE`; the list's first entry is taken out, and if its waiter listens (the `PUBLISH` of `g`
//!   and the entry's digest on its channel reached a subscriber) the key is set to its value for its
//!   TTL, in place of ours. The waiter counts the nodes whose grant message for its current value it
//!   heard; a majority is its lock, with no round of its own (`crate::engine::takeover`). Where
//!   nobody listens (a process killed with `kill -9`: its subscriber connection is gone) or the entry
//!   is a native node's bare name, the key is reserved for the name instead: `r<name>` for a short
//!   time (`ARGV[2]` ms).
//! - **Take-over** ([`TAKE_OVER`], an acquire): sets `K` to the waiter's value when `K` is free,
//!   **holds that value or an earlier epoch of it** (a grant it did not count: too few heard, too
//!   little validity left, an earlier epoch's entry) **or holds the reservation `r<name>` of this
//!   waiter**, and takes its entries out; otherwise it adds its entry at its place (`ZADD NX`) and
//!   keeps the list alive. One command both tries and marks, atomically: a release after it always
//!   sees the mark. A take-over that wins answers the name of the list's next first.
//! - **Release to a known waiter** ([`RELEASE_TO`]): the holder's release grants that one name
//!   where it heads the list, and reserves the key for it elsewhere, whatever each node's list lacks.
//! - **Step back** ([`STEP_BACK`]): a lost take-over's release, sent once, to the nodes that said
//!   yes. Where the key holds that exact value it becomes our reservation (only when a release named
//!   us for this attempt) or is deleted; the wait then moves to its next epoch.
//! - **Unmark** ([`UNMARK`]): a waiter that won drops its entries where it did not win them (once
//!   it has stepped back: all of its wait's entries, by name, TTL and place, on every node, and its
//!   earlier values are released where they do not count for its lock), and a waiter that gives up
//!   drops them everywhere and releases every value of its wait (handing a grant on), so no release
//!   later grants a value nobody holds.
//! - A node's native release publishes an empty message on `K`'s channel, which every named waiter
//!   also hears; a round lost with some grants may be a three-way split nobody holds: the attempt
//!   loop retries it early, since no release will come.
//!
//! # Why it is safe
//! - *Mutual exclusion is SET NX's.* A node holds one value at a time. A value is written only where
//!   `K` is free, holds a reservation (no one's lock: no `Lock` is ever returned for it), holds an
//!   earlier value of the writer's own wait, or — by a release — holds the releasing holder's value,
//!   which that holder gives up in the same step (as if it deleted the key and the waiter set it).
//!   So on every node a value replaces no other live lock, and two clients can hold a majority at the
//!   same time no more than with `SET NX`.
//! - *Quorum and validity.* A take-over round is an ordinary attempt: the clock starts before it is
//!   queued, the lock is granted only on a majority with validity left. A lock made of grants counts
//!   its validity from just before the wait's first value was first sent: no node can hold a value of
//!   the wait before, and each granting node set it for the full TTL after, so each key outlives that
//!   start plus the TTL (drift and the clock guard's log counted from the same moment; a node that
//!   may not vote now is not counted).
//! - *Only current grants count.* A step back may delete a grant whose message is still on its way;
//!   the wait then counts only its next epoch's grants, whose digest differs.
//! - *No replay.* `TAKE_OVER` is acquire-side (`resend: false`). A step back deletes (or reserves)
//!   one exact value whose grants the wait never counts again (it moves on), so a copy that lands
//!   late — on a connection given up, through a proxy that held it — deletes nothing of a lock. The releases
//!   are owner-checked (a second copy finds our value gone and changes nothing), so their `NOSCRIPT`
//!   resend is safe.
//! - *Liveness.* A reservation for a waiter that died expires on its own (at most one node timeout).
//!   A grant to a waiter that is listening but will not come back (frozen with `SIGSTOP`, say) holds
//!   the key for its TTL, as that waiter's own lock would. An entry whose waiter gave up is taken out
//!   by its give-up; one that a lost message or a process killed mid-wait leaves behind expires with
//!   the list, or is reserved (not granted) once its process stops listening. A take-over that lands
//!   late (after its wait won with a later epoch) can queue a dead entry again, which a release may
//!   grant while its process still listens: that key is then held for its TTL, as by a late
//!   `SET NX` of plain Redlock.
//! - *Clocks.* The wall clock orders the list only: a host whose clock is off queues its waiters
//!   early or late (fairness), it never lets two clients hold the lock.
//!
//! Fairness across processes: only queue heads mark, so the list holds at most one live entry per
//! waiting process and is served oldest first; a process that just held the lock joins the back.
//! The grant message carries the entry's digest, not its value: channels are readable by any
//! subscriber (a client allowed to `PUBLISH` could forge one, as a client allowed to write could
//! delete the key: the same trust).

use super::cmd::{script_cmd, Args, Cmd, Keys, NodeResult, Op, Reply, Script};
use super::grant::grant_entry;
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

/// Takes out the entries of the waiter whose entries start with `p` (`<name>:<ttl>:`) at the place
/// `ARGV[i]` (every entry of one wait has the wait's place), but `keep`: whatever values they hold
/// (a wait changes its value at each step back). A Lua function `sweep(i, keep)`.
macro_rules! sweep_fn {
    () => {
        "local function sweep(i, keep) local r = redis.pcall('ZRANGEBYSCORE', q, ARGV[i], ARGV[i]) \
if r.err == nil then for _, e in ipairs(r) do if e ~= keep and string.sub(e, 1, #p) == p then \
redis.call('ZREM', q, e) end end end end "
    };
}

/// Take-over: KEYS = `K`; ARGV = value, TTL ms, wake name, list TTL ms, place (µs), sweep (1 after
/// the wait changed its value). Sets `K` where it is free, holds our value already (a release
/// granted it to our entry) or one of this wait's earlier epochs (the same value but for a lower last
/// byte, see `LockValue::with_epoch`), or our reservation. Answers -1 (taken), or when set the name of the
/// list's new first (the next waiter; names are at least 2 and below 2^53, so a Lua number holds
/// them exactly), or 1 when nobody else waits. Taken, it queues our entry `<name>:<ttl>:<value>` at
/// our place (`ZADD NX`: an entry already there keeps its older place); set, it takes it out. With
/// sweep, the wait's entries of its earlier values go too, so none is left for a release to grant.
/// A string mark of an older client at `K:wait` (`pcall`: `WRONGTYPE`) is replaced by the list; a
/// user the ACL denies the sorted set commands leaves a string mark instead (its releases then wake
/// everyone).
pub(crate) static TAKE_OVER: Script = Script {
    source: concat!(
        "local v = redis.call('GET', KEYS[1]) local q = KEYS[1] .. ':wait' \
local p = ARGV[3] .. ':' .. ARGV[2] .. ':' local m = p .. ARGV[1] ",
        sweep_fn!(),
        "local mine = v and #v == #ARGV[1] and string.sub(v, 1, -2) == string.sub(ARGV[1], 1, -2) \
and string.byte(v, -1) <= string.byte(ARGV[1], -1) \
if v == false or mine or v == 'r' .. ARGV[3] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) \
if ARGV[6] == '1' then sweep(5, nil) else redis.pcall('ZREM', q, m) end \
local h = redis.pcall('ZRANGE', q, 0, 0) \
if h.err == nil and h[1] then return tonumber(string.match(h[1], '^%d+')) or 1 end return 1 end \
local a = redis.pcall('ZADD', q, 'NX', ARGV[5], m) if type(a) == 'table' then redis.call('DEL', q) \
a = redis.pcall('ZADD', q, ARGV[5], m) if type(a) == 'table' then redis.call('SET', q, '1') end \
elseif ARGV[6] == '1' then sweep(5, m) end \
redis.call('PEXPIRE', q, ARGV[4]) return -1"
    ),
    sha1: "603827d52304eedaf810313700c0d63dc664f77d",
    resend: false,
    op: Op::TakeOver,
};

/// Hand-off release to a known waiter: KEYS = `K`; ARGV = value, reservation ms, the waiter's name
/// (what the holder's take-over learned: the list's first name after it when it was granted). Where
/// that waiter heads the list, it is granted the key (`grant_entry!`); otherwise, or where it is not
/// listening, the key is reserved for that one name, so the hand-off never splits between waiters
/// a node's list lacks. Answers 2 (handed off), 0 or -1 as [`RELEASE_HANDOFF`].
pub(crate) static RELEASE_TO: Script = Script {
    source: concat!(
        "local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then \
local q = KEYS[1] .. ':wait' local h = redis.pcall('ZRANGE', q, 0, 0) \
if h.err == nil and h[1] and string.match(h[1], '^%d+') == ARGV[3] then redis.call('ZREM', q, h[1]) ",
        grant_entry!("KEYS[1]", "h[1]", "ARGV[1]"),
        "if granted then return 2 end end redis.pcall('ZREM', q, ARGV[3]) \
redis.call('SET', KEYS[1], 'r' .. ARGV[3], 'PX', ARGV[2]) \
redis.call('PUBLISH', KEYS[1] .. ':h:' .. ARGV[3], ARGV[3]) return 2 elseif v == false then \
return 0 else return -1 end"
    ),
    sha1: "60ff8bda8386da8801ea0e611341b786e4191645",
    resend: true,
    op: Op::ReleaseTo,
};

/// Hand-off release: KEYS = `K`; ARGV = value, reservation ms. The list's first is granted the key
/// (`grant_entry!` in `crate::protocol::grant`), or has it reserved for its name. A string mark (an older client's) is a waiter
/// without a name: the key is deleted and everyone is woken, as by `RELEASE_NOTIFY`.
pub(crate) static RELEASE_HANDOFF: Script = Script {
    source: concat!(
        "local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then \
local n = redis.pcall('ZPOPMIN', KEYS[1] .. ':wait') if n.err == nil and n[1] then ",
        grant_entry!("KEYS[1]", "n[1]", "ARGV[1]"),
        "if granted then return 2 end \
local nm = gn or n[1] redis.call('SET', KEYS[1], 'r' .. nm, 'PX', ARGV[2]) \
redis.call('PUBLISH', KEYS[1] .. ':h:' .. nm, nm) return 2 end \
redis.call('DEL', KEYS[1]) \
if n.err then redis.call('PUBLISH', KEYS[1], '') return 2 end return 1 \
elseif v == false then return 0 else return -1 end"
    ),
    sha1: "af98226eed632f03e7319c58214e8f5ddc212f88",
    resend: true,
    op: Op::ReleaseHandoff,
};

/// Step back, after a lost take-over round: KEYS = `K`; ARGV = value, reservation ms (0: none),
/// wake name. Where the key holds that value (our round's, or a release's grant to our entry), it
/// becomes our reservation (a waiter a release named: the nodes the release has not reached yet will
/// reserve it for us too; the reservation is our place on this node) or is deleted (anyone else: two
/// waiters each keeping what they got would refuse each other until their keys expired, and no
/// release would wake either). Answers 1, 0 (not set) or -1 (someone else's). The waiter then
/// changes its value (`crate::engine::takeover`): a copy of this landing late (on a connection
/// given up, through a proxy that held it) can only find a value no lock holds.
pub(crate) static STEP_BACK: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then if ARGV[2] == '0' then \
redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], 'r' .. ARGV[3], 'PX', ARGV[2]) end \
return 1 elseif v == false then return 0 else return -1 end",
    sha1: "8d33ebcf2b32e96535aad85d05025e3e03e7f19a",
    resend: true,
    op: Op::StepBack,
};

/// Unmark: KEYS = `K`; ARGV = the wait's value, wake name, TTL ms, place (µs), sweep (1 after the
/// wait changed its value). Takes the wait's entry out of the list, or with sweep all of its
/// entries, whatever values they hold: sent by a waiter that won to the nodes that did not grant it
/// (to every node once it has stepped back), and by one that gives up, so no node keeps an entry nobody answers to (and no release grants the
/// key to a value nobody holds).
pub(crate) static UNMARK: Script = Script {
    source: concat!(
        "local q = KEYS[1] .. ':wait' local p = ARGV[2] .. ':' .. ARGV[3] .. ':' ",
        sweep_fn!(),
        "if ARGV[5] == '1' then sweep(4, nil) else redis.pcall('ZREM', q, p .. ARGV[1]) end return 1"
    ),
    sha1: "d2398ed3138dbb5439b58485c83096c3d9fd5992",
    resend: true,
    op: Op::Unmark,
};

impl Handoff {
    /// Takes `entry` out of the list, with `sweep` every entry of its wait (see [`UNMARK`]).
    pub(crate) fn unmark_cmd(&self, keys: &Keys, entry: Entry, sweep: bool) -> Cmd {
        script_cmd(
            self.unmark,
            &Keys::One(keys.as_slice()[0].clone()),
            entry.value,
            Args::of(&[entry.name, entry.ttl_ms, entry.since_us, u64::from(sweep)]),
        )
    }

    /// A take-over attempt of `entry`, marking it for `mark_ms` if it loses; `sweep` after the wait
    /// changed its value.
    pub(crate) fn take_over_cmd(
        &self,
        keys: &Keys,
        entry: Entry,
        mark_ms: u64,
        sweep: bool,
    ) -> Cmd {
        script_cmd(
            self.take_over,
            &Keys::One(keys.as_slice()[0].clone()),
            entry.value,
            Args::of(&[
                entry.ttl_ms,
                entry.name,
                mark_ms,
                entry.since_us,
                u64::from(sweep),
            ]),
        )
    }

    /// A lost take-over's step back (see [`STEP_BACK`]); `reserve_ms` 0 deletes.
    pub(crate) fn step_back_cmd(&self, keys: &Keys, entry: Entry, reserve_ms: u64) -> Cmd {
        script_cmd(
            self.step_back,
            &Keys::One(keys.as_slice()[0].clone()),
            entry.value,
            Args::of(&[reserve_ms, entry.name]),
        )
    }

    /// The release that hands the key to the waiter named `name` (its grant, else a reservation
    /// of `reserve_ms`).
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

    /// The release that hands the key to the oldest waiter (its grant, else a reservation of
    /// `reserve_ms`).
    pub(crate) fn release_cmd(&self, keys: &Keys, value: LockValue, reserve_ms: u64) -> Cmd {
        script_cmd(
            self.release,
            &Keys::One(keys.as_slice()[0].clone()),
            value,
            Args::of(&[reserve_ms.max(1)]),
        )
    }
}

/// A waiter's entry in the list: its wake name, the value it waits with (one until it steps back),
/// the TTL it asks and its place (the wall-clock µs its call began waiting). A release grants the
/// entry's value; the waiter counts only grants of its current value (see
/// `crate::engine::takeover`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) name: u64,
    pub(crate) value: LockValue,
    pub(crate) ttl_ms: u64,
    pub(crate) since_us: u64,
}

impl Entry {
    /// What a release that grants this entry publishes on its channel: `g` and the first 16 hex
    /// digits of the entry's SHA1 (as `crate::protocol::grant` computes it).
    pub(crate) fn grant_message(&self) -> bytes::Bytes {
        let mut entry = format!("{}:{}:", self.name, self.ttl_ms).into_bytes();
        entry.extend_from_slice(self.value.as_bytes());
        let hex = sha1_smol::Sha1::from(&entry).digest().to_string();
        let mut message = Vec::with_capacity(17);
        message.push(b'g');
        message.extend_from_slice(&hex.as_bytes()[..16]);
        message.into()
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
