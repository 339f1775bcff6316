//! The Lua scripts that make release and extend owner-checked, with their SHA1 digests.
//!
//! Keys and values always travel as `KEYS`/`ARGV`, never spliced into the source, so a resource name is
//! data and can be any bytes. Each script answers `1` (done: we owned it), `0` (the key is gone: expired)
//! or `-1` (someone else's value is there), so callers can tell "not owner" from "already expired".
//! The digests are checked against a real `SCRIPT LOAD` in the tests.

/// A Lua script sent with `EVALSHA`, falling back to `EVAL` when a node answers `NOSCRIPT`.
#[derive(Debug)]
pub(crate) struct Script {
    pub(crate) source: &'static str,
    pub(crate) sha1: &'static str,
}

/// Compare-and-delete: `DEL` only if the key still holds our value.
pub(crate) static RELEASE: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v == ARGV[1] then return redis.call('DEL', KEYS[1]) \
elseif v == false then return 0 else return -1 end",
    sha1: "73afff61f75cb8d8c5c4e250cc4561d4b66c2e4f",
};

/// Compare-and-`PEXPIRE`: reset the TTL (ms in `ARGV[2]`) only if the key still holds our value.
pub(crate) static EXTEND: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 \
elseif v == false then return 0 else return -1 end",
    sha1: "4bbcd4c07b7515b9ce88be6710a50d3381df9c19",
};
