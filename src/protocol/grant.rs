//! The plain lock's grant by a release: one Lua fragment, shared by every release that hands the
//! key to the first waiter elsewhere (`crate::protocol::handoff` has the protocol and its argument;
//! `crate::protocol::scripts::RELEASE_NOTIFY` and the hand-off's releases run it).

/// A release's grant to the waiter entry `$w` (a Lua expression; taken out of the list already) of
/// the key `$k`, the releaser's own value being `$own`: an entry `<name>:<ttl ms>:<value>`
/// (`crate::protocol::handoff`) whose waiter is listening (its channel's `PUBLISH` reached a
/// subscriber: a process killed with `kill -9` has none) gets the key set to its value for its TTL,
/// and its channel the grant's digest (`g` and the first 16 hex digits of the entry's SHA1: the value
/// is a secret, channels are readable by any subscriber). Sets `granted`, and `gn` to the entry's
/// name (nil for an older client's or a native node's bare name, which has no value). An entry of
/// the releaser's own value or any other epoch of it (the same value but for the last byte: a stale
/// entry of its wait, or the current one of a wait handing on a retired value's grant) is never
/// granted: that would hand the key back to the same wait. Nor is an entry whose TTL `SET PX` would
/// refuse (0, or one that overflows the node's expiry): the grant is published before the key is
/// set, and a script does not roll back, so such an entry would be announced and never set — a
/// waiter counting that message would claim a node it does not hold. The engine never writes one
/// (`Core::check_ttl`: 1 ms to `max_ttl`); any client can.
macro_rules! grant_entry {
    ($k:literal, $w:literal, $own:literal) => {
        concat!(
            "local gn, gt, gx = string.match(",
            $w,
            ", '^(%d+):(%d+):(.+)$') \
local gp = gt and tonumber(gt) \
local granted = gx ~= nil and gp ~= nil and gp > 0 and gp < 1e13 and string.sub(gx, 1, -2) ~= string.sub(",
            $own,
            ", 1, -2) and redis.call('PUBLISH', ",
            $k,
            " .. ':h:' .. gn, \
'g' .. string.sub(redis.sha1hex(",
            $w,
            "), 1, 16)) > 0 \
if granted then redis.call('SET', ",
            $k,
            ", gx, 'PX', gt) end "
        )
    };
}
pub(crate) use grant_entry;
