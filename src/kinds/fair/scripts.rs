//! The fair lock's Lua scripts (the protocol they implement and its argument: `kinds::fair`).
//!
//! KEYS: [1] lock key, [2] queue (waiter -> ticket). Each waiter's entry is live while its **live
//! key** exists: `KEYS[1]:fair:l:` and the waiter's wake name, set with the waiter's TTL by its
//! enqueue and refreshed by its attempts, so the node's own key expiry times out a silent waiter
//! and no script reads a clock. A script reads another waiter's live key only where it needs the
//! head to be live (same hash slot as the lock key: a Cluster node runs it). ARGV: [1] the
//! waiter's value, [2] TTL ms, [3] its ticket (attempts) or its hint (enqueues). Tickets stay below
//! 2^53 (each is a hint, microseconds since 1970, or one above a live ticket), so a score holds them
//! exactly.

use crate::protocol::cmd::{Op, Script};

/// The live key of the waiter whose value is the Lua expression `$v` (its wake name after
/// `:fair:l:`: the value is a secret, key names are not).
macro_rules! live {
    ($v:literal) => {
        concat!(
            "KEYS[1] .. ':fair:l:' .. string.sub(redis.sha1hex(",
            $v,
            "), 1, 16)"
        )
    };
}

/// Sets `h` to the queue's first live entry (or `nil`), removing the dead entries before it
/// (`pruned` says some were): an entry whose live key expired is a waiter that stopped refreshing
/// for a TTL. Only the head is checked, so a script pays one read for this, and a dead entry is
/// removed once, when it reaches the head. The sender's own entry counts as live: its script
/// refreshed it.
macro_rules! live_head {
    () => {
        concat!(
            "local h = redis.call('ZRANGE', KEYS[2], 0, 0)[1] \
while h and h ~= ARGV[1] and redis.call('EXISTS', ",
            live!("h"),
            ") == 0 do redis.call('ZREM', KEYS[2], h) pruned = true \
h = redis.call('ZRANGE', KEYS[2], 0, 0)[1] end "
        )
    };
}

/// Publishes the wake name of the waiter `h` on its engine's channel of the key (see
/// `kinds::fair::wake_name` and `wake_channel`: the key, `:w:` and the hex of the value's first 8
/// bytes, its engine's tag), so only the process it belongs to hears it. The name, not the value:
/// channels are readable by any subscriber, the value is a secret.
macro_rules! wake {
    ($h:literal) => {
        concat!(
            "redis.call('PUBLISH', KEYS[1] .. ':w:' .. string.format('%02x%02x%02x%02x%02x%02x%02x%02x', \
string.byte(",
            $h,
            ", 1, 8)), string.sub(redis.sha1hex(",
            $h,
            "), 1, 16)) "
        )
    };
}

/// Keeps the queue alive past every live key of its entries: a refresh to twice the TTL when less
/// than a TTL is left, so one `PTTL` is all most scripts pay.
macro_rules! keep_queue {
    () => {
        "if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], 2 * ttl) end "
    };
}

/// The grant rule, for an attempt or an enqueue: the key free (or already ours) and we are the
/// head of the live queue. A key of ours while we are not the head (an earlier round's release that
/// did not land) is deleted: it must neither grant us out of turn nor keep the head waiting. A free
/// key we cannot take wakes the head when this script may have changed who that is (`moved`: our
/// entry moved, maybe off the head; `pruned`; or the key we just freed). With the key another's,
/// nothing more is read: the head matters only once it is free. Sets `r` to `'G'` when granted.
macro_rules! grant {
    () => {
        concat!(
            "local cur = redis.call('GET', KEYS[1]) \
if cur == false or cur == ARGV[1] then local pruned = false ",
            live_head!(),
            "if h == ARGV[1] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl) r = 'G' else \
if cur then redis.call('DEL', KEYS[1]) end \
if h and (cur or pruned or moved) then ",
            wake!("h"),
            "end end end "
        )
    };
}

/// Enqueue and first try: the ticket one above the queue's highest, or the waiter's hint `ARGV[3]`
/// if that is higher (see `kinds::fair`: it only helps the nodes agree), in place of any stale entry
/// of ours, whose older ticket (a lost leave of an earlier place) would otherwise rank us too early;
/// its live key; then the grant rule. Answers `G` or `Q` and the ticket (`Q17`).
pub(crate) static ENQUEUE: Script = Script {
    source: concat!(
        "local ttl = tonumber(ARGV[2]) local r = 'Q' local s = tonumber(ARGV[3]) \
local top = redis.call('ZREVRANGE', KEYS[2], 0, 0, 'WITHSCORES') \
if top[2] and tonumber(top[2]) >= s then s = tonumber(top[2]) + 1 end \
local moved = redis.call('ZADD', KEYS[2], s, ARGV[1]) == 0 \
redis.call('SET', ",
        live!("ARGV[1]"),
        ", '1', 'PX', ttl) ",
        keep_queue!(),
        grant!(),
        "return r .. string.format('%d', s)"
    ),
    sha1: "7a7f487ddc87864886733b7ccb5bf27ffde16584",
    resend: false,
    op: Op::Own,
};

/// Attempt: where the waiter is still queued and live, refresh its live key and set its entry's
/// ticket to the waiter's `ARGV[3]` (the agree step; a no-op once set), then the grant rule of
/// [`ENQUEUE`]. `L` if it is not there (never re-added): gone, or its live key expired (its entry
/// is then removed here, as the head's check would). A key of ours is then deleted (we are no head
/// here), and with the key free the live head is woken if we freed the key or took our entry out.
pub(crate) static ATTEMPT: Script = Script {
    source: concat!(
        "local ttl = tonumber(ARGV[2]) local r = 'Q' local moved = false \
local s = redis.call('ZSCORE', KEYS[2], ARGV[1]) local out = false \
if s and redis.call('PEXPIRE', ",
        live!("ARGV[1]"),
        ", ttl) == 0 then redis.call('ZREM', KEYS[2], ARGV[1]) s = false out = true end \
if s == false then local cur = redis.call('GET', KEYS[1]) local freed = cur == ARGV[1] \
if freed then redis.call('DEL', KEYS[1]) cur = false end \
if cur == false and (freed or out) then local pruned = false ",
        live_head!(),
        "if h then ",
        wake!("h"),
        "end end return 'L' end \
if tonumber(s) ~= tonumber(ARGV[3]) then moved = redis.call('ZRANGE', KEYS[2], 0, 0)[1] == ARGV[1] \
redis.call('ZADD', KEYS[2], 'XX', ARGV[3], ARGV[1]) end ",
        keep_queue!(),
        grant!(),
        "return r"
    ),
    sha1: "1b424ec61ddabfea7a48ac5345fde4a597da0021",
    resend: false,
    op: Op::Own,
};

/// Release: compare-and-delete the key, drop the holder's entry and live key, and wake the new
/// head if the key was freed or the holder was the head. Replies as the plain release: 1 deleted,
/// 0 no key, -1 another's key. Like [`UNLOCK_FAIR`] and [`LEAVE`] it checks no head's live key
/// (only the scripts that grant need the live queue): a head it names that is dead wakes nobody,
/// and the live waiters behind it find out at their next attempt, which removes it and wakes the
/// new head.
pub(crate) static RELEASE_FAIR: Script = Script {
    source: concat!(
        "local v = redis.call('GET', KEYS[1]) local top = redis.call('ZRANGE', KEYS[2], 0, 1) \
redis.call('ZREM', KEYS[2], ARGV[1]) redis.call('DEL', ",
        live!("ARGV[1]"),
        ") if v and v ~= ARGV[1] then return -1 end \
if v then redis.call('DEL', KEYS[1]) end \
local h = top[1] if h == ARGV[1] then h = top[2] elseif not v then h = nil end \
if h then ",
        wake!("h"),
        "end if v then return 1 end return 0"
    ),
    sha1: "6ee5736db4b2f4c9b3b631af57a9444868399eba",
    resend: true,
    op: Op::Own,
};

/// Release to our next waiter: [`RELEASE_FAIR`]'s, then, with the key free, the queue's head gets
/// the key at once if it is the waiter this engine named: `ARGV[3]` its ticket, `ARGV[4]` the first
/// 13 hex digits of its value's SHA1 as a number (the value is a secret, and one `Cmd` carries
/// one). It is [`ATTEMPT`]'s grant rule, run by the release's round instead of a round of the
/// waiter's own (`crate::engine::successors`). Otherwise the head is woken as by [`RELEASE_FAIR`].
/// Answers as the plain release (`1`, `0`, `-1`, as strings), then `G` and the SHA1 of the value it
/// set when it granted (`1G<40 hex digits>`), which the engine checks against the waiter's.
///
/// It neither checks nor refreshes the head's live key: one read of the queue's first two entries,
/// the removals, and the `SET` that hands the key over (no `DEL` before it). The named waiter is
/// alive (parked in the releasing process, refreshing its entry); a dead head ahead of it gets the
/// wake-up instead, and the waiters' next attempts remove it. The granted head's live key may then
/// expire while it holds the key: its entry is removed when another's check finds it at the head,
/// and it grants nobody meanwhile (the key is not free). Acquire-side (`resend: false`), since it
/// grants: the clock guard reads the node's `TIME` before it, and a `NOSCRIPT` is not answered by
/// its source; the holder's release then goes again in the background as [`RELEASE_FAIR`].
pub(crate) static RELEASE_FAIR_TO: Script = Script {
    source: concat!(
        "local v = redis.call('GET', KEYS[1]) \
local top = redis.call('ZRANGE', KEYS[2], 0, 1, 'WITHSCORES') \
redis.call('ZREM', KEYS[2], ARGV[1]) redis.call('DEL', ",
        live!("ARGV[1]"),
        ") if v and v ~= ARGV[1] then return '-1' end local r = v and '1' or '0' \
local h, t = top[1], top[2] if h == ARGV[1] then h, t = top[3], top[4] end \
if h and tonumber(t) == tonumber(ARGV[3]) then local d = redis.sha1hex(h) \
if tonumber(string.sub(d, 1, 13), 16) == tonumber(ARGV[4]) then \
redis.call('SET', KEYS[1], h, 'PX', tonumber(ARGV[2])) return r .. 'G' .. d end end \
if v then redis.call('DEL', KEYS[1]) end \
if h and (v or top[1] == ARGV[1]) then ",
        wake!("h"),
        "end return r"
    ),
    sha1: "6457dc5a2209fbbe5c8bbda2b08543679a9bc2f4",
    resend: false,
    op: Op::Own,
};

/// A round's key of ours released, the place kept (a grant on fewer than a majority): the plain
/// compare-and-delete, then wake the head if it is another waiter (where we are the head, nobody
/// else can be granted). Replies as the plain release.
pub(crate) static UNLOCK_FAIR: Script = Script {
    source: concat!(
        "local v = redis.call('GET', KEYS[1]) \
if v == false then return 0 elseif v ~= ARGV[1] then return -1 end \
redis.call('DEL', KEYS[1]) \
local h = redis.call('ZRANGE', KEYS[2], 0, 0)[1] \
if h and h ~= ARGV[1] then ",
        wake!("h"),
        "end return 1"
    ),
    sha1: "f2ca71fe485dfc9eb9b8da55100906f320d669cd",
    resend: true,
    op: Op::Own,
};

/// Give up: drop the waiter's entry and any key of its own; with the key free, wake the head if
/// we were it or freed the key.
pub(crate) static LEAVE: Script = Script {
    source: concat!(
        "local top = redis.call('ZRANGE', KEYS[2], 0, 1) \
redis.call('ZREM', KEYS[2], ARGV[1]) redis.call('DEL', ",
        live!("ARGV[1]"),
        ") local cur = redis.call('GET', KEYS[1]) local freed = cur == ARGV[1] \
if freed then redis.call('DEL', KEYS[1]) cur = false end \
local h = top[1] if h == ARGV[1] then h = top[2] elseif not freed then h = nil end \
if h and cur == false then ",
        wake!("h"),
        "end return 1"
    ),
    sha1: "60343130f76afd60da173181ae8aa45a150e160b",
    resend: true,
    op: Op::Own,
};
