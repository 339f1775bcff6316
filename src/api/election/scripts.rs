//! An election's scripts. KEYS: [1] the lock key (`prefix{name}`, the fenced lock's), [2] the
//! leader record (`prefix{name}:leader`, a hash: `o` the leader's lock value, `t` its term, `r`
//! its revision, both 20-digit zero-padded decimals so Lua compares them as strings exactly, `v`
//! the published value). The record has no TTL, as the fence counter beside it: it counts only
//! while the lock key holds the value `o` names, so a dead leader's record is inert, and the next
//! leader's overwrites it. Every change is published on the record's key name, the channel
//! observers subscribe to.
//!
//! None of them can grant anything, so each may be resent as `EVAL` after a `NOSCRIPT` (they are
//! not in the handshake's list): the write is idempotent and only moves a leader's record to a
//! higher revision, so a resend that arrives after a later write changes nothing.

use crate::protocol::cmd::{Op, Script};

/// Publishes a leader's value, owner-checked. ARGV: the lock value, the term, the revision, the
/// value. Answers 1 (written, or already at this revision or a later one), 0 (the lock key is
/// gone), -1 (another owner's lock).
pub(super) static LEADER_WRITE: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v ~= ARGV[1] then if v == false then return 0 end return -1 end \
local r = redis.call('HMGET', KEYS[2], 'o', 'r') \
if r[1] == ARGV[1] and r[2] and r[2] >= ARGV[3] then return 1 end \
redis.call('HSET', KEYS[2], 'o', ARGV[1], 't', ARGV[2], 'r', ARGV[3], 'v', ARGV[4]) \
redis.call('PUBLISH', KEYS[2], '') return 1",
    sha1: "ffeef56cfce762d916d85ea739f6d35ab95689ba",
    resend: true,
    op: Op::Own,
};

/// Removes a leader's own record (resign, drop), whether or not its lock is still there: a record
/// that names this leader is nobody else's. KEYS: the record only. ARGV: the lock value. Answers 1
/// (removed) or 0 (not ours, or none).
pub(super) static LEADER_CLEAR: Script = Script {
    source: "local r = redis.call('HMGET', KEYS[1], 'o') \
if r[1] ~= ARGV[1] then return 0 end \
redis.call('DEL', KEYS[1]) redis.call('PUBLISH', KEYS[1], '') return 1",
    sha1: "46345044c3428d53a664389877cbbcc8ce2736fe",
    resend: true,
    op: Op::Own,
};

/// Reads the live leader of one node: `<term>|<revision>|<pttl>|<value>` when the lock key is held
/// by the value the record names and has time left, else nil. The lock value never leaves the
/// node: the term tells holders apart (no two leaders share one).
pub(super) static LEADER_READ: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if not v then return false end \
local r = redis.call('HMGET', KEYS[2], 'o', 't', 'r', 'v') \
if r[1] ~= v or not r[2] or not r[3] or not r[4] then return false end \
local p = redis.call('PTTL', KEYS[1]) \
if p <= 0 then return false end \
return r[2] .. '|' .. r[3] .. '|' .. p .. '|' .. r[4]",
    sha1: "048a49822dab52a21c8cc6812eab76d4007cfe5d",
    resend: true,
    op: Op::Own,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// `EVALSHA` sends the constant: a stale one would fall back to `EVAL` on every call unseen.
    #[test]
    fn the_scripts_digests_match_their_sources() {
        for script in [&LEADER_WRITE, &LEADER_CLEAR, &LEADER_READ] {
            let digest = sha1_smol::Sha1::from(script.source).digest().to_string();
            assert_eq!(script.sha1, digest, "{}", script.source);
        }
    }
}
