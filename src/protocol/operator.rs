//! The operator's scripts: [`INSPECT`] (behind `Redlock::inspect`) and [`FORCE_RELEASE`] (behind
//! `Redlock::force_release`). Neither takes its keys by position: the caller passes every key the
//! list of kinds declares (`super::catalog::Catalog::keys`), and inspect each key's suffix beside
//! it, so a kind added to the list is inspected and force-released without an edit here.
//!
//! None of these scripts returns a lock value: inspect answers "ours / not ours" by comparing the
//! value's first bytes with the engine tag it is given in `ARGV`, and shows a holder label only when
//! the label's digest (`redis.sha1hex`) matches the value that holds the lock now.

use super::cmd::{Op, Script};

/// Read-only: one line per node, `|`-separated, the label last (it may hold anything):
/// lock key type (`s` string, `n` none, `o` another type), its PTTL, ours (`1`/`0`), the value's kind
/// byte (`-` none, `?` not a value of this format, `p` a semaphore's `permits:<K>` marker), live
/// readers, ours among the first 256 of them, ms until the last reader expires, the write intent's
/// PTTL, the fence counter (`-` none), the waiter mark's PTTL, live permits, the marker's K (`-`
/// none), live fair-queue entries other than the holder's, the holder label.
///
/// KEYS: the resource key, then any of its other keys; ARGV: the tag, then each other key's suffix
/// (`:fence`, `:rw:readers`, ...), so the script finds a key by its suffix, and a suffix it does not
/// know is passed and ignored. A suffix not passed reads as an absent key. Live = expiry after the
/// node's `TIME`, as the kinds' own scripts prune.
pub(crate) static INSPECT: Script = Script {
    source: "local K = {} for i = 2, #KEYS do K[ARGV[i]] = KEYS[i] end \
local function ty(k) if not k then return 'none' end return redis.call('TYPE', k)['ok'] end \
local function pttl(k) if not k then return -2 end return redis.call('PTTL', k) end \
local tm = redis.call('TIME') local now = tm[1] * 1000 + math.floor(tm[2] / 1000) \
local t, v, ours, kind, label = ty(KEYS[1]), false, '0', '-', '' \
if t == 'string' then v = redis.call('GET', KEYS[1]) end \
local limit = '-' \
if v then if string.sub(v, 1, 8) == ARGV[1] then ours = '1' end \
if #v == 25 then kind = string.sub(v, 9, 9) else kind = '?' end \
if string.match(v, '^permits:%d+$') then kind = 'p' limit = string.sub(v, 9) end \
if ty(K[':holder']) == 'string' then local h = redis.call('GET', K[':holder']) \
if string.sub(h, 1, 40) == redis.sha1hex(v) then label = string.sub(h, 41) end end end \
local readers, mine, rttl = 0, 0, -2 \
if ty(K[':rw:readers']) == 'zset' then \
readers = redis.call('ZCOUNT', K[':rw:readers'], '(' .. now, '+inf') \
if readers > 0 then local last = redis.call('ZRANGE', K[':rw:readers'], -1, -1, 'WITHSCORES') \
rttl = math.floor(tonumber(last[2]) - now) \
for _, m in ipairs(redis.call('ZRANGEBYSCORE', K[':rw:readers'], '(' .. now, '+inf', 'LIMIT', 0, 256)) do \
if string.sub(m, 1, 8) == ARGV[1] then mine = mine + 1 end end end end \
local permits, queued = 0, 0 \
if ty(K[':sem']) == 'zset' then permits = redis.call('ZCOUNT', K[':sem'], '(' .. now, '+inf') end \
if ty(K[':fair:exp']) == 'zset' then queued = redis.call('ZCOUNT', K[':fair:exp'], '(' .. now, '+inf') \
if v then local e = redis.call('ZSCORE', K[':fair:exp'], v) if e and tonumber(e) > now then queued = queued - 1 end end end \
local fence = '-' if ty(K[':fence']) == 'string' then fence = redis.call('GET', K[':fence']) end \
local tc = 'o' if t == 'string' then tc = 's' elseif t == 'none' then tc = 'n' end \
return table.concat({tc, redis.call('PTTL', KEYS[1]), ours, kind, readers, mine, rttl, \
pttl(K[':rw:intent']), fence, pttl(K[':wait']), permits, limit, queued, label}, '|')",
    sha1: "39f4c0515cd62e3982af84b24486fde1839ce1d8",
    resend: true,
    op: Op::Own,
};

/// Deletes a resource's keys whatever their values and answers how many of the counted ones
/// existed; publishes the release when a waiter has marked itself, so it does not sleep to its
/// timeout. KEYS: the counted keys (the resource key first), then the other deleted ones, then the
/// kept ones; ARGV: how many are counted, how many more are deleted, and the index of the waiter
/// mark among KEYS (0: none). Kept keys are passed so that a Cluster node set routes one slot.
pub(crate) static FORCE_RELEASE: Script = Script {
    source: "local c, q, w = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]) \
local n = 0 for i = 1, c do n = n + redis.call('DEL', KEYS[i]) end \
for i = c + 1, c + q do redis.call('DEL', KEYS[i]) end \
if w > 0 and redis.call('EXISTS', KEYS[w]) == 1 then redis.call('PUBLISH', KEYS[1], '') end \
return n",
    sha1: "2cc77b3350b729559d0d82aaff66dc925dc3602c",
    resend: true,
    op: Op::Own,
};

#[cfg(test)]
mod tests {
    /// The operator's scripts' `sha1` are their sources' digests: `EVALSHA` sends the constant.
    #[test]
    fn operator_script_digests_match_their_sources() {
        for script in [&super::INSPECT, &super::FORCE_RELEASE] {
            let digest = sha1_smol::Sha1::from(script.source).digest().to_string();
            assert_eq!(script.sha1, digest, "{}", script.source);
        }
    }
}
