//! The operator's side of the engine: the scripts behind [`crate::Redlock::inspect`],
//! [`crate::Redlock::force_release`] and the holder label (and the labeled lock, [`LABELED`]), the kind byte every lock value carries, and the
//! script list every connection's handshake loads (the lock kinds' and these).
//!
//! None of these scripts returns a lock value: inspect answers "ours / not ours" by comparing the
//! value's first bytes with the engine tag it is given in `ARGV`, and shows a holder label only when
//! the label's digest (`redis.sha1hex`) matches the value that holds the lock now.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use crate::algo::quorum::Vote;
use crate::algo::value::LockValue;
use crate::kinds::exclusive::{RELEASE, RELEASE_NOTIFY};
use crate::kinds::spec::Spec;
use crate::transport::{Cmd, Keys, Script};

/// Every key a resource can have, after its own (`prefix{resource}`), in the order the inspect
/// script takes them: fence counter, reader set, write intent, waiter mark, holder label, the
/// semaphore's permits, the fair lock's queue and its expiries.
pub(crate) const SUFFIXES: [&[u8]; 8] = [
    b":fence",
    b":rw:readers",
    b":rw:intent",
    b":wait",
    b":holder",
    b":sem",
    b":fair:q",
    b":fair:exp",
];

/// The byte after the engine tag in a lock value: which kind of lock drew it, so inspect can say.
/// Read from the kind's name so the kinds need no field for it; a kind not listed here is `?`.
pub(crate) fn kind_code(spec: &Spec) -> u8 {
    match spec.name {
        "Exclusive" | "Labeled" => b'x',
        "Fenced" => b'f',
        "Multi" => b'm',
        "Read" => b'r',
        "Write" => b'w',
        "Permit" => b'p',
        "Fair" => b'q',
        _ => b'?',
    }
}

/// Every script a connection's handshake loads: the lock kinds' and the operator's.
pub(crate) fn handshake_scripts() -> &'static [&'static Script] {
    static ALL: OnceLock<Vec<&'static Script>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = crate::kinds::scripts().to_vec();
        all.extend([&INSPECT, &FORCE_RELEASE, &ACQUIRE_LABELED, &EXTEND_LABELED]);
        all
    })
}

/// Read-only: one line per node, `|`-separated, the label last (it may hold anything):
/// lock key type (`s` string, `n` none, `o` another type), its PTTL, ours (`1`/`0`), the value's kind
/// byte (`-` none, `?` not a value of this format, `p` a semaphore's `permits:<K>` marker), live
/// readers, ours among the first 256 of them, ms until the last reader expires, the write intent's
/// PTTL, the fence counter (`-` none), the waiter mark's PTTL, live permits, the marker's K (`-`
/// none), live fair-queue entries other than the holder's, the holder label. KEYS: the resource key
/// then [`SUFFIXES`]; ARGV: the tag. Live = expiry after the node's `TIME`, as the kinds' own scripts
/// prune.
pub(crate) static INSPECT: Script = Script {
    source: "local function ty(k) return redis.call('TYPE', k)['ok'] end \
local tm = redis.call('TIME') local now = tm[1] * 1000 + math.floor(tm[2] / 1000) \
local t, v, ours, kind, label = ty(KEYS[1]), false, '0', '-', '' \
if t == 'string' then v = redis.call('GET', KEYS[1]) end \
local limit = '-' \
if v then if string.sub(v, 1, 8) == ARGV[1] then ours = '1' end \
if #v == 25 then kind = string.sub(v, 9, 9) else kind = '?' end \
if string.match(v, '^permits:%d+$') then kind = 'p' limit = string.sub(v, 9) end \
if ty(KEYS[6]) == 'string' then local h = redis.call('GET', KEYS[6]) \
if string.sub(h, 1, 40) == redis.sha1hex(v) then label = string.sub(h, 41) end end end \
local readers, mine, rttl = 0, 0, -2 \
if ty(KEYS[3]) == 'zset' then \
readers = redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf') \
if readers > 0 then local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES') \
rttl = math.floor(tonumber(last[2]) - now) \
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. now, '+inf', 'LIMIT', 0, 256)) do \
if string.sub(m, 1, 8) == ARGV[1] then mine = mine + 1 end end end end \
local permits, queued = 0, 0 \
if ty(KEYS[7]) == 'zset' then permits = redis.call('ZCOUNT', KEYS[7], '(' .. now, '+inf') end \
if ty(KEYS[9]) == 'zset' then queued = redis.call('ZCOUNT', KEYS[9], '(' .. now, '+inf') \
if v then local e = redis.call('ZSCORE', KEYS[9], v) if e and tonumber(e) > now then queued = queued - 1 end end end \
local fence = '-' if ty(KEYS[2]) == 'string' then fence = redis.call('GET', KEYS[2]) end \
local tc = 'o' if t == 'string' then tc = 's' elseif t == 'none' then tc = 'n' end \
return table.concat({tc, redis.call('PTTL', KEYS[1]), ours, kind, readers, mine, rttl, \
redis.call('PTTL', KEYS[4]), fence, redis.call('PTTL', KEYS[5]), permits, limit, queued, label}, '|')",
    sha1: "da0c239fcca789f1be73c75941d7573c31e6ff7a",
    resend: true,
};

/// Deletes the lock key, the reader set, the write intent and the holder label whatever their
/// values; keeps the fence counter (see [`crate::Redlock::force_release`]) and the waiters' mark, and
/// publishes the release when a waiter has marked itself. Answers how many of the first three existed.
/// KEYS: lock key, reader set, intent, waiter mark, holder label.
pub(crate) static FORCE_RELEASE: Script = Script {
    source: "local n = redis.call('DEL', KEYS[1], KEYS[2], KEYS[3]) redis.call('DEL', KEYS[5]) \
if redis.call('EXISTS', KEYS[4]) == 1 then redis.call('PUBLISH', KEYS[1], '') end \
return n",
    sha1: "b1f185f2ffb3d64e05e926b552a593dc6f5c2320",
    resend: true,
};

/// A labeled exclusive acquire: `SET NX PX` and, when it lands, the holder label key with the
/// value's digest and the label (PX `ARGV[3]`, the engine's `max_ttl`). KEYS: lock key, label key;
/// ARGV: value, TTL ms, label TTL ms, label. Answers 1 (set) or -1 (taken), like the other acquire
/// scripts; never resent as `EVAL` (see `Script::resend`).
pub(crate) static ACQUIRE_LABELED: Script = Script {
    source: "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then \
redis.call('SET', KEYS[2], redis.sha1hex(ARGV[1]) .. ARGV[4], 'PX', ARGV[3]) return 1 end \
return -1",
    sha1: "2b4760e79ad5e8db3e67d009d40fe8b9dfb4eef0",
    resend: false,
};

/// An exclusive lock with a holder label (`Config::holder_label`): what `Core::target` makes of an
/// exclusive target when the engine has a label. Its keys are the resource key and the label key;
/// its acquire is [`ACQUIRE_LABELED`] (built by `Core::acquire_cmd`, which knows the label), its extend
/// [`EXTEND_LABELED`], which keeps the label alive as long as the lock, so a lock renewed past
/// `max_ttl` still shows who holds it. The price: its renewals are not coalesced with other locks'.
/// Release, hand-off and local queueing are the exclusive lock's.
pub(crate) static LABELED: Spec = Spec {
    name: "Labeled",
    acquire: unlabeled_set,
    vote: Vote::of_script,
    quorum: crate::kinds::spec::majority,
    release: &RELEASE,
    release_notify: &RELEASE_NOTIFY,
    extend: &EXTEND_LABELED,
    extends_first_key: false,
    give_up: None,
    suffixes: &[b":holder"],
    queues_locally: true,
    hands_off: true,
    multi_resource: false,
    shared: false,
    scripts: &[&ACQUIRE_LABELED, &EXTEND_LABELED],
};

/// Never sent: `Core::acquire_cmd` sends [`ACQUIRE_LABELED`] for this kind, with the engine's label.
/// (Were it sent, its `+OK` would not read as a vote of [`LABELED`]: a failed node, never a grant.)
fn unlabeled_set(keys: &Keys, value: LockValue, ttl_ms: u64, _: u64) -> Cmd {
    Cmd::SetNxPx {
        key: keys.as_slice()[0].clone(),
        value,
        ttl_ms,
    }
}

/// [`crate::kinds::exclusive::EXTEND`], and the label key (`KEYS[2]`) kept at least as long as the
/// lock.
pub(crate) static EXTEND_LABELED: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) \
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end return 1 \
elseif v == false then return 0 else return -1 end",
    sha1: "d19a7759723f95e08a0a2d6ff692c773c851a5be",
    resend: true,
};

/// The labeled acquire (see [`ACQUIRE_LABELED`]) on `keys` (the resource key, the label key).
pub(crate) fn labeled_acquire(
    keys: &Keys,
    value: LockValue,
    ttl_ms: u64,
    label_ttl_ms: u64,
    label: &Bytes,
) -> Cmd {
    Cmd::Eval {
        script: &ACQUIRE_LABELED,
        keys: keys.clone(),
        args: Arc::from([
            Bytes::copy_from_slice(value.as_bytes()),
            Bytes::from(ttl_ms.to_string()),
            Bytes::from(label_ttl_ms.max(ttl_ms).to_string()),
            label.clone(),
        ]),
    }
}

#[cfg(test)]
mod tests {
    /// The operator's scripts' `sha1` are their sources' digests (the kinds' own are checked in
    /// `kinds`): `EVALSHA` sends the constant.
    #[test]
    fn operator_script_digests_match_their_sources() {
        for script in [
            &super::INSPECT,
            &super::FORCE_RELEASE,
            &super::ACQUIRE_LABELED,
            &super::EXTEND_LABELED,
        ] {
            let digest = sha1_smol::Sha1::from(script.source).digest().to_string();
            assert_eq!(script.sha1, digest, "{}", script.source);
        }
    }
}
