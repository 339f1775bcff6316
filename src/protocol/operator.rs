//! The operator's script [`FORCE_RELEASE`] (behind `Redlock::force_release`; inspect's is built
//! from the kinds' parts, `super::inspect`). It does not take its keys by position: the caller passes
//! every key the list of kinds declares (`super::catalog::Catalog::forced`), so a kind added to the
//! list is force-released without an edit here. It returns no lock value.

use super::cmd::{Op, Script};

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
    /// The operator's script's `sha1` is its source's digest: `EVALSHA` sends the constant.
    #[test]
    fn the_operator_script_digest_matches_its_source() {
        let script = &super::FORCE_RELEASE;
        let digest = sha1_smol::Sha1::from(script.source).digest().to_string();
        assert_eq!(script.sha1, digest, "{}", script.source);
    }
}
