//! The Lua scripts: owner-checked release and extend, and the acquire side of multi-resource and
//! read-write locks, with their SHA1 digests.
//!
//! Keys and values always travel as `KEYS`/`ARGV`, never spliced into the source, so a resource name is
//! data and can be any bytes. Release/extend scripts answer `1` (done: we owned it), `0` (gone: expired)
//! or `-1` (someone else's value is there), so callers can tell "not owner" from "already expired";
//! acquire scripts answer `1` (acquired) or `-1` (taken). The digests are checked against a real
//! `SCRIPT LOAD` in the tests, and by every connection's handshake, which loads them all.

/// A Lua script sent with `EVALSHA`, falling back to `EVAL` when a node answers `NOSCRIPT`.
#[derive(Debug)]
pub(crate) struct Script {
    pub(crate) source: &'static str,
    pub(crate) sha1: &'static str,
    /// Whether a `NOSCRIPT` answer may be followed by `EVAL` of the source. The resend joins the back
    /// of the connection's queue, behind commands sent later; that is harmless for owner-checked
    /// release/extend/marker scripts, but an acquire resent behind its own release would set keys
    /// nobody releases. Those fail the node's vote instead, and the connection reloads the script.
    pub(crate) resend: bool,
}

/// Compare-and-delete: `DEL` only if the key still holds our value. Also releases a write lock
/// (`KEYS[1]` is the writer key; the others are ignored).
pub(crate) static RELEASE: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v == ARGV[1] then return redis.call('DEL', KEYS[1]) \
elseif v == false then return 0 else return -1 end",
    sha1: "73afff61f75cb8d8c5c4e250cc4561d4b66c2e4f",
    resend: true,
};

/// [`RELEASE`], then — only when a waiter elsewhere has marked itself (see [`MARK_WAITING`]) —
/// `PUBLISH` on the key's name so it wakes at once, answering 2 instead of 1. Uncontended releases
/// pay one `EXISTS`, not a `PUBLISH`: the nodes are the bottleneck of a busy lock service.
pub(crate) static RELEASE_NOTIFY: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v == ARGV[1] then redis.call('DEL', KEYS[1]) \
if redis.call('EXISTS', KEYS[1] .. ':wait') == 1 then redis.call('PUBLISH', KEYS[1], '') return 2 end \
return 1 elseif v == false then return 0 else return -1 end",
    sha1: "25d6aa0d92d61881e46b2b8d17f45af094b09f38",
    resend: true,
};

/// A client that lost a round marks that it waits (`KEYS[1]..':wait'`, for `ARGV[2]` ms), so the
/// holder's release answers 2 and its process yields to the waiter at the end of a hand-off streak.
/// (The marker key is derived, not declared: fine on standalone nodes, the only kind this engine's
/// own transport serves.)
pub(crate) static MARK_WAITING: Script = Script {
    source: "redis.call('SET', KEYS[1] .. ':wait', '1', 'PX', ARGV[2]) return 1",
    sha1: "ea7d993d5d0b27e328e5d76513e65dee1105e6a7",
    resend: true,
};

/// Compare-and-`PEXPIRE`: reset the TTL (ms in `ARGV[2]`) only if the key still holds our value.
pub(crate) static EXTEND: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 \
elseif v == false then return 0 else return -1 end",
    sha1: "4bbcd4c07b7515b9ce88be6710a50d3381df9c19",
    resend: true,
};

/// Coalesced extend: [`EXTEND`] for several exclusive locks in one call (`KEYS[i]` with value
/// `ARGV[2i-1]` and TTL `ARGV[2i]` ms). Answers one character per lock, in order: `1` extended, `0`
/// gone, `-` someone else's (or a key of another type: `pcall`, so one odd key cannot fail the
/// others' answers). One call per node per watchdog tick instead of one per lock: the nodes parse,
/// dispatch and reply once.
pub(crate) static EXTEND_MANY: Script = Script {
    source: "local r = {} \
for i, k in ipairs(KEYS) do local v = redis.pcall('GET', k) \
if v == ARGV[2 * i - 1] then redis.call('PEXPIRE', k, ARGV[2 * i]) r[i] = '1' \
elseif v == false then r[i] = '0' else r[i] = '-' end end \
return table.concat(r)",
    sha1: "81a233c89febc3d1371cd894da87af9fc0586cdc",
    resend: true,
};

/// Multi-resource acquire: set every key (PX `ARGV[2]`) or none, atomically on this node.
pub(crate) static ACQUIRE_MULTI: Script = Script {
    source: "for _, k in ipairs(KEYS) do if redis.call('EXISTS', k) == 1 then return -1 end end \
for _, k in ipairs(KEYS) do redis.call('SET', k, ARGV[1], 'PX', ARGV[2]) end return 1",
    sha1: "f69de666a49b4d05c67f379e529aa25649363d2e",
    resend: false,
};

/// Multi-resource release: delete each key that holds our value.
pub(crate) static RELEASE_MULTI: Script = Script {
    source: "local mine, other = 0, 0 \
for _, k in ipairs(KEYS) do local v = redis.call('GET', k) \
if v == ARGV[1] then redis.call('DEL', k) mine = mine + 1 elseif v ~= false then other = other + 1 end end \
if other > 0 then return -1 elseif mine == #KEYS then return 1 else return 0 end",
    sha1: "78c6f83903604553c9a162a05318091066ff6109",
    resend: true,
};

/// Multi-resource extend: `PEXPIRE` every key, only if every key holds our value.
pub(crate) static EXTEND_MULTI: Script = Script {
    source: "local gone = 0 \
for _, k in ipairs(KEYS) do local v = redis.call('GET', k) \
if v == false then gone = gone + 1 elseif v ~= ARGV[1] then return -1 end end \
if gone > 0 then return 0 end \
for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, ARGV[2]) end return 1",
    sha1: "d59efcad97f753e7e1f17de0f553a80570ae0de6",
    resend: true,
};

// Read-write locks. KEYS: [1] writer key (string), [2] readers (sorted set: reader value -> expiry in
// the node's ms clock), [3] writer intent (the ticket of a writer waiting for readers to leave).
// ARGV: [1] lock value, [2] TTL ms, [3] writer ticket. Readers expire per entry, by the same node clock
// that expires PX keys; the set itself expires with its longest reader.
// Why the node's `TIME` truncated to ms is safe: an entry scored `floor(now) + ttl` is removed once
// `floor(later) >= score` (ZREMRANGEBYSCORE and EXTEND_READ's `<=` are inclusive), so it lives at least
// `ttl - 1 ms` after the script ran, which is after the client's round started; the client's validity
// is at most `ttl - drift` with `drift >= 2 ms` (`timing.rs`), so no reader trusts an entry the node has
// dropped. PX keys have the same 1 ms granularity. A node whose wall clock jumps forward drops both early.

/// Read acquire: refused while a writer holds the lock **or waits for it** (writer preference), or
/// when `ARGV[3]` readers already hold it.
pub(crate) static ACQUIRE_READ: Script = Script {
    source: "local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000) \
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) \
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then return -1 end \
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return -1 end \
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1]) \
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end \
return 1",
    sha1: "be7b575b29d19e8db78f9362077740aff941e98b",
    resend: false,
};

/// Write acquire: granted when no writer and no live reader; while readers remain, it records the
/// writer's intent (its ticket) so no new reader gets in, and only the intent's owner may take it next.
pub(crate) static ACQUIRE_WRITE: Script = Script {
    source: "local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000) \
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) \
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end \
local intent = redis.call('GET', KEYS[3]) \
if intent ~= false and intent ~= ARGV[3] then return -1 end \
if redis.call('ZCARD', KEYS[2]) > 0 then redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2]) return -1 end \
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) \
if intent ~= false then redis.call('DEL', KEYS[3]) end \
return 1",
    sha1: "211c41ebffeaba5bcb83db4f358e5f535c71907c",
    resend: false,
};

/// A writer that gives up withdraws its intent (`ARGV[2]` is its ticket here).
pub(crate) static CANCEL_INTENT: Script = Script {
    source: "if redis.call('GET', KEYS[3]) == ARGV[2] then redis.call('DEL', KEYS[3]) return 1 end return 0",
    sha1: "e6c99d130eac819ba11b90954860b957912de057",
    resend: true,
};

/// Read release: remove our reader entry.
pub(crate) static RELEASE_READ: Script = Script {
    source: "if redis.call('ZREM', KEYS[2], ARGV[1]) == 1 then return 1 end return 0",
    sha1: "ec0e4c19dace08457385644ab730daa2be929b9f",
    resend: true,
};

/// Read extend: move our entry's expiry, only while it is still live.
pub(crate) static EXTEND_READ: Script = Script {
    source: "local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000) \
local s = redis.call('ZSCORE', KEYS[2], ARGV[1]) \
if s == false or tonumber(s) <= now then return 0 end \
redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[2]), ARGV[1]) \
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end \
return 1",
    sha1: "0b53351cbdc5e6054c1cc78b771c22eba7d2af5f",
    resend: true,
};

// Fencing. KEYS: [1] lock key, [2] the resource's fence counter (no TTL; a 20-digit zero-padded
// decimal, so Lua's string comparison is numeric comparison and no counter passes through a double).

/// Fenced acquire: `SET NX PX`, answering `+<counter>` (set) or `-<counter>` (taken) with the node's
/// fence counter, in the same round trip.
pub(crate) static ACQUIRE_FENCED: Script = Script {
    source: "local c = redis.call('GET', KEYS[2]) or '0' \
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return '+' .. c end \
return '-' .. c",
    sha1: "fed820042ea4030d9010d0f55c299911033c8c78",
    resend: false,
};

/// Fence commit: raise the counter to the proposal `ARGV[2]`, only while our lock value is there and
/// only upward; `C<counter>` when the node is already at or above it.
pub(crate) static COMMIT_FENCE: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v ~= ARGV[1] then if v == false then return 0 end return -1 end \
local t = string.rep('0', 20 - #ARGV[2]) .. ARGV[2] \
local c = redis.call('GET', KEYS[2]) \
if c and c >= t then return 'C' .. c end \
redis.call('SET', KEYS[2], t) return 1",
    sha1: "61781927340d957dd626264402250b366d377508",
    resend: false,
};

/// Every script, loaded by each connection's handshake.
pub(crate) static ALL: [&Script; 15] = [
    &ACQUIRE_FENCED,
    &COMMIT_FENCE,
    &RELEASE,
    &RELEASE_NOTIFY,
    &MARK_WAITING,
    &EXTEND,
    &EXTEND_MANY,
    &ACQUIRE_MULTI,
    &RELEASE_MULTI,
    &EXTEND_MULTI,
    &ACQUIRE_READ,
    &ACQUIRE_WRITE,
    &CANCEL_INTENT,
    &RELEASE_READ,
    &EXTEND_READ,
];
