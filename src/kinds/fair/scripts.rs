//! The fair lock's Lua scripts (the protocol they implement and its argument: `kinds::fair`).
//!
//! KEYS: [1] lock key, [2] queue (waiter -> ticket), [3] expiries (waiter -> node ms). ARGV: [1] the
//! waiter's value, [2] TTL ms, [3] its ticket (attempts) or its hint (enqueues). Tickets stay below
//! 2^53 (each is a hint, microseconds since 1970, or one above a live ticket), so a score holds them
//! exactly.

use crate::protocol::cmd::{Op, Script};
use crate::protocol::scripts::node_now;

/// The scripts that grant ([`ENQUEUE`], [`ATTEMPT`]) start here: `now` on the node's clock, and the
/// expired entries dropped (`pruned` says some were). Only a count is read unless one has expired,
/// so a script pays one cheap read for pruning, and each expired entry is removed once.
macro_rules! prune {
    ($($body:expr),+) => {
        concat!(
            node_now!(),
            "local pruned = redis.call('ZCOUNT', KEYS[3], '-inf', now) > 0 \
if pruned then \
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do redis.call('ZREM', KEYS[2], m) end \
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) end ",
            $($body),+
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

/// Wakes the queue's head, if there is one.
macro_rules! wake_head {
    () => {
        concat!(
            "local h = redis.call('ZRANGE', KEYS[2], 0, 0)[1] if h then ",
            wake!("h"),
            "end "
        )
    };
}

/// Keeps the queue's keys alive past every entry in them: the two keys always hold the same
/// waiters, so one `PTTL` tells for both, and a refresh to twice the TTL makes the next one due
/// only after a TTL.
macro_rules! keep_keys {
    () => {
        "if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], 2 * ttl) \
redis.call('PEXPIRE', KEYS[3], 2 * ttl) end "
    };
}

/// The grant rule, for an attempt or an enqueue: the key free (or already ours) and we are the
/// head of the live queue. A key of ours while we are not the head (an earlier round's release that
/// did not land) is deleted: it must neither grant us out of turn nor keep the head waiting. A free
/// key we cannot take wakes the head when this script may have changed who that is (`moved`: our
/// entry moved, maybe off the head; `pruned`; or the key we just freed). Sets `r` to `'G'` when
/// granted.
macro_rules! grant {
    () => {
        concat!(
            "local cur = redis.call('GET', KEYS[1]) \
if cur == false or cur == ARGV[1] then local h = redis.call('ZRANGE', KEYS[2], 0, 0)[1] \
if h == ARGV[1] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl) r = 'G' else \
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
/// its expiry; then the grant rule. Answers `G` or `Q` and the ticket (`Q17`).
pub(crate) static ENQUEUE: Script = Script {
    source: prune!(
        "local ttl = tonumber(ARGV[2]) local r = 'Q' local s = tonumber(ARGV[3]) \
local top = redis.call('ZREVRANGE', KEYS[2], 0, 0, 'WITHSCORES') \
if top[2] and tonumber(top[2]) >= s then s = tonumber(top[2]) + 1 end \
local moved = redis.call('ZADD', KEYS[2], s, ARGV[1]) == 0 \
redis.call('ZADD', KEYS[3], now + ttl, ARGV[1]) ",
        keep_keys!(),
        grant!(),
        "return r .. string.format('%d', s)"
    ),
    sha1: "570b9701b6392a04dd3ab9c586d98631b34cd208",
    resend: false,
    op: Op::Own,
};

/// Attempt: where the waiter is still queued, set its entry's ticket to the waiter's `ARGV[3]` (the
/// agree step; a no-op once set) and refresh its expiry, then the grant rule of [`ENQUEUE`]. `L` if
/// it is not there (never re-added); a key of ours is then deleted (we are no head here).
pub(crate) static ATTEMPT: Script = Script {
    source: prune!(
        "local ttl = tonumber(ARGV[2]) local r = 'Q' local moved = false \
local s = redis.call('ZSCORE', KEYS[2], ARGV[1]) \
if s == false then local cur = redis.call('GET', KEYS[1]) local freed = cur == ARGV[1] \
if freed then redis.call('DEL', KEYS[1]) cur = false end \
if cur == false and (freed or pruned) then ",
        wake_head!(),
        "end return 'L' end \
if tonumber(s) ~= tonumber(ARGV[3]) then moved = redis.call('ZRANGE', KEYS[2], 0, 0)[1] == ARGV[1] \
redis.call('ZADD', KEYS[2], 'XX', ARGV[3], ARGV[1]) end \
redis.call('ZADD', KEYS[3], 'XX', now + ttl, ARGV[1]) ",
        keep_keys!(),
        grant!(),
        "return r"
    ),
    sha1: "473060ebc58c8a4573cbe3b62521930a448be56e",
    resend: false,
    op: Op::Own,
};

/// Release: compare-and-delete the key, drop the holder's entry, and wake the new head if the key
/// was freed or the holder was the head. Replies as the plain release: 1 deleted, 0 no key, -1
/// another's key. Like [`UNLOCK_FAIR`] and [`LEAVE`] it does not prune (only the scripts that grant
/// need the live queue): a head it names that has expired wakes nobody, and the live waiters behind
/// it find out at their next attempt, whose pruning wakes the new head.
pub(crate) static RELEASE_FAIR: Script = Script {
    source: concat!(
        "local v = redis.call('GET', KEYS[1]) local top = redis.call('ZRANGE', KEYS[2], 0, 1) \
redis.call('ZREM', KEYS[2], ARGV[1]) redis.call('ZREM', KEYS[3], ARGV[1]) \
if v and v ~= ARGV[1] then return -1 end \
if v then redis.call('DEL', KEYS[1]) end \
local h = top[1] if h == ARGV[1] then h = top[2] elseif not v then h = nil end \
if h then ",
        wake!("h"),
        "end if v then return 1 end return 0"
    ),
    sha1: "c47a1f75efe75aee9456cf089a57d777cb481af2",
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
/// It neither prunes nor refreshes the head's expiry, so it reads no clock: one read of the queue's
/// first two entries, the two removals, and the `SET` that hands the key over (no `DEL` before it).
/// The named waiter is alive (parked in the releasing process); a head ahead of it that expired
/// but is not pruned yet gets the wake-up instead, and the waiters' next attempts prune it. The
/// granted head's entry may then expire while it holds the key: it grants nobody (the key is not
/// free), and its release removes what is left. Acquire-side (`resend: false`), since it grants:
/// the clock guard reads the node's `TIME` before it, and a `NOSCRIPT` is not answered by its
/// source; the holder's release then goes again in the background as [`RELEASE_FAIR`].
pub(crate) static RELEASE_FAIR_TO: Script = Script {
    source: concat!(
        "local v = redis.call('GET', KEYS[1]) \
local top = redis.call('ZRANGE', KEYS[2], 0, 1, 'WITHSCORES') \
redis.call('ZREM', KEYS[2], ARGV[1]) redis.call('ZREM', KEYS[3], ARGV[1]) \
if v and v ~= ARGV[1] then return '-1' end local r = v and '1' or '0' \
local h, t = top[1], top[2] if h == ARGV[1] then h, t = top[3], top[4] end \
if h and tonumber(t) == tonumber(ARGV[3]) then local d = redis.sha1hex(h) \
if tonumber(string.sub(d, 1, 13), 16) == tonumber(ARGV[4]) then \
redis.call('SET', KEYS[1], h, 'PX', tonumber(ARGV[2])) return r .. 'G' .. d end end \
if v then redis.call('DEL', KEYS[1]) end \
if h and (v or top[1] == ARGV[1]) then ",
        wake!("h"),
        "end return r"
    ),
    sha1: "cc6cf4cc77ba01da4b3bdcd551ac963f2cdf090f",
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
redis.call('ZREM', KEYS[2], ARGV[1]) redis.call('ZREM', KEYS[3], ARGV[1]) \
local cur = redis.call('GET', KEYS[1]) local freed = cur == ARGV[1] \
if freed then redis.call('DEL', KEYS[1]) cur = false end \
local h = top[1] if h == ARGV[1] then h = top[2] elseif not freed then h = nil end \
if h and cur == false then ",
        wake!("h"),
        "end return 1"
    ),
    sha1: "fd1c98199022c6087e3cd0fd2c47aa06b021e502",
    resend: true,
    op: Op::Own,
};
