//! Copies of two lock scripts for the transport's own tests, so they need nothing above the transport
//! (`crate::kinds::exclusive` checks that these stay equal to the real ones).

use crate::protocol::cmd::Script;

/// `crate::kinds::exclusive::RELEASE`.
pub(crate) static RELEASE: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v == ARGV[1] then return redis.call('DEL', KEYS[1]) \
elseif v == false then return 0 else return -1 end",
    sha1: "73afff61f75cb8d8c5c4e250cc4561d4b66c2e4f",
    resend: true,
};

/// `crate::kinds::exclusive::EXTEND_MANY`.
pub(crate) static EXTEND_MANY: Script = Script {
    source: "local r = {} \
for i, k in ipairs(KEYS) do local v = redis.pcall('GET', k) \
if v == ARGV[2 * i - 1] then redis.call('PEXPIRE', k, ARGV[2 * i]) r[i] = '1' \
elseif v == false then r[i] = '0' else r[i] = '-' end end \
return table.concat(r)",
    sha1: "81a233c89febc3d1371cd894da87af9fc0586cdc",
    resend: true,
};
