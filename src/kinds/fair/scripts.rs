//! The fair lock's Lua scripts (the protocol they implement and its argument: `kinds::fair`).
//!
//! KEYS: [1] lock key, [2] queue (waiter -> ticket). Each waiter's entry is live while its **live
//! key** exists: `KEYS[1]:fair:l:` and the waiter's wake name, holding the waiter's current epoch,
//! set with its TTL by its enqueue and refreshed by its attempts (and a lost round's unlock), so
//! the node's own key expiry times out a silent waiter and no script reads a clock. A
//! script reads another waiter's live key only where it needs the head to be live (same hash slot
//! as the lock key: a Cluster node runs it). ARGV: [1] the waiter's value, [2] TTL ms, [3] its
//! ticket (attempts) or its hint (enqueues), [4] its epoch (see `kinds::fair`: a grant by message
//! counts for the epoch it names). Tickets stay below 2^53 (each is a hint, microseconds since
//! 1970, or one above a live ticket), so a score holds them exactly.

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

/// The most dead entries one script removes (about 2.5 ms of a node's time on a 2-core VM): a
/// queue that many waiters left without a leave (a fleet killed at once) is drained over several
/// scripts instead of stalling the node for all of it in one, past every client's deadline.
macro_rules! prune {
    () => {
        "1000"
    };
}

/// Sets `h` to the queue's first live entry (or `nil`: none, or, with `more` set, not found within
/// `prune!` removals), removing the dead entries before it
/// (`pruned` says some were): an entry whose live key expired is a waiter that stopped refreshing
/// for a TTL. Only the head is checked, so a script pays one read for this, and a dead entry is
/// removed once, when it reaches the head. The sender's own entry counts as live: its script
/// refreshed it. At most `prune!` entries per script (see `drain_on!`).
macro_rules! live_head {
    () => {
        concat!(
            "local h = redis.call('ZRANGE', KEYS[2], 0, 0)[1] local left = ",
            prune!(),
            " while h and h ~= ARGV[1] and redis.call('EXISTS', ",
            live!("h"),
            ") == 0 do if left == 0 then h = nil more = true break end \
redis.call('ZREM', KEYS[2], h) pruned = true left = left - 1 \
h = redis.call('ZRANGE', KEYS[2], 0, 0)[1] end "
        )
    };
}

/// The channel of the waiter `h`'s engine for the key (see `kinds::fair::wake_channel`: the key,
/// `:w:` and the hex of the value's first 8 bytes, its engine's tag). A queue member shorter than
/// a value (none of an engine's) is padded, so a stray one cannot fail the script that names it.
macro_rules! channel {
    ($h:literal) => {
        concat!(
            "KEYS[1] .. ':w:' .. string.format('%02x%02x%02x%02x%02x%02x%02x%02x', string.byte(",
            $h,
            " .. '        ', 1, 8))"
        )
    };
}

/// Publishes the wake name of the waiter `h` on its engine's channel of the key, so only the
/// process it belongs to hears it (see `kinds::fair::wake_name`). The name, not the value:
/// channels are readable by any subscriber, the value is a secret.
macro_rules! wake {
    ($h:literal) => {
        concat!(
            "redis.call('PUBLISH', ",
            channel!($h),
            ", string.sub(redis.sha1hex(",
            $h,
            "), 1, 16)) "
        )
    };
}

/// A forced release ends the holder's place by deleting its live key (`v`: the value the resource
/// key holds, see `crate::protocol::operator`): the next attempt drops the entry as dead (the queue
/// is kept: its entries expire on their own). Then it wakes the queue's first live entry among its
/// first ten, by name, as a release does: that waiter is the head now and its attempt takes the
/// key. None live there (a fleet killed with its holder): the waiters try at their keepalive. The
/// queue's commands run only where it exists, so a user without the fair lock's rights may still
/// break other kinds. A node cannot tell a broken holder from a waiter whose grant there was on too
/// few nodes and not yet taken back: such a waiter loses its place on that node too, as the holder
/// on it (mutual exclusion holds: the next holder still needs the head on a majority).
pub(super) const FORCE_ENDS_HOLDER: &str = concat!(
    "if v then redis.call('DEL', ",
    live!("v"),
    ") end local fq = KEYS[1] .. ':fair:q' if redis.call('EXISTS', fq) == 1 then \
for _, h in ipairs(redis.call('ZRANGE', fq, 0, 9)) do if h ~= v and redis.call('EXISTS', ",
    live!("h"),
    ") == 1 then ",
    wake!("h"),
    "break end end end"
);

/// Where a script stopped pruning at `prune!` entries (`more`), the head is unknown: a waiter
/// behind the dead run is woken so its attempt drops the next ones, and a live waiter behind a long
/// run of them is reached in round trips, not in its keepalive pauses. `drain_on!(self)`: the
/// sender, whose entry this attempt or enqueue just refreshed (live, behind the run); `drain_on!()`,
/// for a script whose sender has no entry (a release, an attempt that lost its place): the queue's
/// last entry, the newest and likeliest live. If that one is dead too, the live waiters' own
/// attempts go on, each waking itself.
macro_rules! drain_on {
    (self) => {
        concat!("if more then ", wake!("ARGV[1]"), "end ")
    };
    () => {
        concat!(
            "if more then local t = redis.call('ZRANGE', KEYS[2], -1, -1)[1] if t then ",
            wake!("t"),
            "end end "
        )
    };
}

/// A release's hand-over, with the key free: the live head `h` (dead entries before it dropped, as
/// [`live_head!`] does, reading each one's live key) gets the key, set to its value until its live
/// key expires, and a grant message on its engine's channel: its wake name, `g`, and 16 hex digits
/// of the SHA1 of its value, `:` and the epoch its live key holds, which only that waiter can
/// compute and which counts only while that epoch is its current one. Sets `g` when it granted.
///
/// Until the live key expires: that key was set, with the waiter's full TTL, by the command of
/// the epoch it holds, which the waiter sent after the moment its validity counts from (see
/// `kinds::fair`); and a head that died holds the key no longer than its place. A live key that
/// does not hold an epoch (none of this engine's) gets the plain wake-up.
macro_rules! grant_head {
    () => {
        concat!(
            "local l = false local left = ",
            prune!(),
            " while h do l = redis.call('GET', ",
            live!("h"),
            ") if l then break end if left == 0 then h = nil more = true break end \
redis.call('ZREM', KEYS[2], h) left = left - 1 \
h = redis.call('ZRANGE', KEYS[2], 0, 0)[1] end \
if h then local pt = redis.call('PTTL', ",
            live!("h"),
            ") if pt > 0 and string.match(l, '^%d+$') then \
redis.call('SET', KEYS[1], h, 'PX', pt) g = true \
redis.call('PUBLISH', ",
            channel!("h"),
            ", string.sub(redis.sha1hex(h), 1, 16) .. 'g' .. \
string.sub(redis.sha1hex(h .. ':' .. l), 1, 16)) else ",
            wake!("h"),
            "end end "
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
/// did not land), or while the head is not known yet (dead entries left ahead of us, `more`), is
/// deleted: it must neither grant us out of turn nor keep the head waiting. A free
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
        "local ttl = tonumber(ARGV[2]) local r = 'Q' local s = tonumber(ARGV[3]) local more = false \
local top = redis.call('ZREVRANGE', KEYS[2], 0, 0, 'WITHSCORES') \
if top[2] and tonumber(top[2]) >= s then s = tonumber(top[2]) + 1 end \
local moved = redis.call('ZADD', KEYS[2], s, ARGV[1]) == 0 \
redis.call('SET', ",
        live!("ARGV[1]"),
        ", ARGV[4] or '0', 'PX', ttl) ",
        keep_queue!(),
        grant!(),
        drain_on!(self),
        "return r .. string.format('%d', s)"
    ),
    sha1: "bc6f2a4a5f01c570c23e79adb31d61946d072f3f",
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
        "local ttl = tonumber(ARGV[2]) local r = 'Q' local moved = false local more = false \
local s = redis.call('ZSCORE', KEYS[2], ARGV[1]) local out = false \
if s and not redis.call('SET', ",
        live!("ARGV[1]"),
        ", ARGV[4] or '0', 'PX', ttl, 'XX') then \
redis.call('ZREM', KEYS[2], ARGV[1]) s = false out = true end \
if s == false then local cur = redis.call('GET', KEYS[1]) local freed = cur == ARGV[1] \
if freed then redis.call('DEL', KEYS[1]) cur = false end \
if cur == false and (freed or out) then local pruned = false ",
        live_head!(),
        "if h then ",
        wake!("h"),
        "end end ",
        drain_on!(),
        "return 'L' end \
if tonumber(s) ~= tonumber(ARGV[3]) then moved = redis.call('ZRANGE', KEYS[2], 0, 0)[1] == ARGV[1] \
redis.call('ZADD', KEYS[2], 'XX', ARGV[3], ARGV[1]) end ",
        keep_queue!(),
        grant!(),
        drain_on!(self),
        "return r"
    ),
    sha1: "b8e8a62b85a1a7e55c337af85f74de7b0372e72f",
    resend: false,
    op: Op::Own,
};

/// Release: compare-and-delete the key, drop the holder's entry and live key, and hand the key
/// to the live head ([`grant_head!`]) if the key was freed or the holder was the head. Replies as
/// the plain release: 1 deleted, 0 no key, -1 another's key. A head found dead on the way is
/// dropped; when none is live, the key is left free.
pub(crate) static RELEASE_FAIR: Script = Script {
    source: concat!(
        "local v = redis.call('GET', KEYS[1]) local top = redis.call('ZRANGE', KEYS[2], 0, 1) local more = false \
redis.call('ZREM', KEYS[2], ARGV[1]) redis.call('DEL', ",
        live!("ARGV[1]"),
        ") if v and v ~= ARGV[1] then return -1 end local g = false \
local h = top[1] if h == ARGV[1] then h = top[2] elseif not v then h = nil end ",
        grant_head!(),
        drain_on!(),
        "if v and not g then redis.call('DEL', KEYS[1]) end if v then return 1 end return 0"
    ),
    sha1: "ab2b6eb6cd71a23b9825ef377389817ed26aa24a",
    resend: true,
    op: Op::Own,
};

/// Release to our next waiter: [`RELEASE_FAIR`]'s, but with the key free, the queue's head gets
/// the key at once if it is the waiter this engine named: `ARGV[3]` its ticket, `ARGV[4]` the first
/// 13 hex digits of its value's SHA1 as a number (the value is a secret, and one `Cmd` carries
/// one). It is [`ATTEMPT`]'s grant rule, run by the release's round instead of a round of the
/// waiter's own (`crate::engine::successors`). Otherwise the key goes to the live head by message,
/// as by [`RELEASE_FAIR`]. Answers as the plain release (`1`, `0`, `-1`, as strings), then `G` and
/// the SHA1 of the value it set when it granted the named waiter (`1G<40 hex digits>`), which the
/// engine checks against the waiter's.
///
/// The named waiter's live key is neither read nor refreshed: it is alive (parked in the releasing
/// process, refreshing its entry), and a dead head ahead of it is not the named one. The granted
/// head's live key may then expire while it holds the key: its entry is dropped when another's
/// check finds it at the head, and it grants nobody meanwhile (the key is not free). Acquire-side
/// (`resend: false`), since it grants by its reply: the clock guard reads the node's `TIME` before
/// it, and a `NOSCRIPT` is not answered by its source; the holder's release then goes again in the
/// background as [`RELEASE_FAIR`].
pub(crate) static RELEASE_FAIR_TO: Script = Script {
    source: concat!(
        "local v = redis.call('GET', KEYS[1]) local more = false \
local top = redis.call('ZRANGE', KEYS[2], 0, 1, 'WITHSCORES') \
redis.call('ZREM', KEYS[2], ARGV[1]) redis.call('DEL', ",
        live!("ARGV[1]"),
        ") if v and v ~= ARGV[1] then return '-1' end local r = v and '1' or '0' \
local h, t = top[1], top[2] if h == ARGV[1] then h, t = top[3], top[4] end \
if h and tonumber(t) == tonumber(ARGV[3]) then local d = redis.sha1hex(h) \
if tonumber(string.sub(d, 1, 13), 16) == tonumber(ARGV[4]) then \
redis.call('SET', KEYS[1], h, 'PX', tonumber(ARGV[2])) return r .. 'G' .. d end end \
if not (v or top[1] == ARGV[1]) then h = nil end local g = false ",
        grant_head!(),
        drain_on!(),
        "if v and not g then redis.call('DEL', KEYS[1]) end return r"
    ),
    sha1: "6437cc7a0cc9b1423088268a75ca4b26f83bb6ee",
    resend: false,
    op: Op::Own,
};

/// A round's key of ours released, the place kept (a grant on fewer than a majority): first our
/// live key moves on from the round's epoch to `ARGV[3]` (with the TTL `ARGV[2]`), so that a grant
/// message of the round's epoch, for a key this deletes, is never counted; then the plain
/// compare-and-delete, and a wake-up for the head if it is another waiter (where we are the head,
/// nobody else can be granted). Replies as the plain release.
///
/// Only where our live key is at the round's epoch (`ARGV[3]` - 1); anywhere else it does
/// nothing. Sent once, but a `NOSCRIPT` has it run again as `EVAL` behind the commands sent after
/// it: such a late copy must neither move a later round's epoch back nor delete a key that round,
/// or a release granting it, set. Where the round never ran, nothing of that round is there.
pub(crate) static UNLOCK_FAIR: Script = Script {
    source: concat!(
        "local l = redis.call('GET', ",
        live!("ARGV[1]"),
        ") if not l or tonumber(l) ~= tonumber(ARGV[3]) - 1 then return 0 end \
redis.call('SET', ",
        live!("ARGV[1]"),
        ", ARGV[3], 'PX', ARGV[2]) local v = redis.call('GET', KEYS[1]) \
if v == false then return 0 elseif v ~= ARGV[1] then return -1 end \
redis.call('DEL', KEYS[1]) \
local h = redis.call('ZRANGE', KEYS[2], 0, 0)[1] \
if h and h ~= ARGV[1] then ",
        wake!("h"),
        "end return 1"
    ),
    sha1: "c6eb7db37c091641eadd6ddf260c849bf9bf2c2c",
    resend: true,
    op: Op::Own,
};

/// Give up: drop the waiter's entry and any key of its own; with the key free, wake the head if
/// we were it or freed the key. Only where our live key is missing or at an epoch up to `ARGV[2]`:
/// a requeue's leave names the last epoch of the place it gives up, so a late copy of it (a
/// `NOSCRIPT` answered by `EVAL` behind later commands) leaves the new place alone; the wait's
/// final give-up names every epoch.
pub(crate) static LEAVE: Script = Script {
    source: concat!(
        "local l = tonumber(redis.call('GET', ",
        live!("ARGV[1]"),
        ")) if l and l > tonumber(ARGV[2]) then return 0 end \
local top = redis.call('ZRANGE', KEYS[2], 0, 1) \
redis.call('ZREM', KEYS[2], ARGV[1]) redis.call('DEL', ",
        live!("ARGV[1]"),
        ") local cur = redis.call('GET', KEYS[1]) local freed = cur == ARGV[1] \
if freed then redis.call('DEL', KEYS[1]) cur = false end \
local h = top[1] if h == ARGV[1] then h = top[2] elseif not freed then h = nil end \
if h and cur == false then ",
        wake!("h"),
        "end return 1"
    ),
    sha1: "e473fef0643c22522cca2a1c0867aef4da364728",
    resend: true,
    op: Op::Own,
};
