//! Key layout: which Redis keys a resource's lock uses.
//!
//! A lock touches several keys in one script (its value, the waiter mark `:wait`, the fence counter,
//! a read-write lock's reader set and writer intent). On a Redis Cluster every key of one script must
//! live in one hash slot, so the engine gives each resource a hash tag: the key is
//! `prefix + "{" + resource + "}"`. A resource that already has a hash tag is used as it is
//! (`prefix + resource`): that is how a multi-resource lock puts its resources in one slot
//! (`{order:7}:items`, `{order:7}:payment`). The layout does not depend on what the nodes are, so
//! every engine pointed at the same nodes agrees on the keys whatever its node list.
//!
//! One consequence: `orders` and `{orders}` name the same lock (the same key; `Lock::resource`
//! reports `orders`). That only ever locks more, never less. A name that leaves no tag (one starting
//! with `}`, or a prefix ending in `{}`) is refused.
//!
//! # Shared keys
//! [`KeyFormat::Plain`] drops the braces: the key is `prefix + resource`, the name itself with an
//! empty prefix — what other Redlock clients (`rslock`, redsync, node-redlock) use, so this engine
//! and they contend for the same key. A kind's extra keys (`:fence`, `:rw:...`, `:wait`, ...) then
//! share the resource's slot only if the name (or prefix) has its own tag: [`slot_safe`] is the
//! rule the engine applies on a Redis Cluster node set before it sends anything.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::LockError;

/// How a resource name becomes its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[non_exhaustive]
pub enum KeyFormat {
    /// `prefix + "{" + resource + "}"` (the resource as it is when it has a hash tag): every key of a
    /// lock in one Cluster hash slot, whatever the name. Default.
    #[default]
    Tagged,
    /// `prefix + resource`, no braces: the key other Redlock clients use for the same name (with an
    /// empty prefix), so locks taken here and there exclude each other. On a Redis Cluster node set
    /// the kinds with extra keys (fenced, read-write, semaphore, fair, holder label) and release
    /// notifications need a name with its own `{tag}`; see `docs/guide.md`, "Shared keys".
    Plain,
}

/// Builds the key of `resource` under `prefix`, followed by `suffix`.
pub(crate) fn key(
    format: KeyFormat,
    prefix: &[u8],
    resource: &[u8],
    suffix: &[u8],
) -> Result<Bytes, LockError> {
    if format == KeyFormat::Plain {
        return Ok([prefix, resource, suffix].concat().into());
    }
    let wrap = !has_hash_tag(resource);
    let mut key = BytesMut::with_capacity(prefix.len() + resource.len() + suffix.len() + 2);
    key.put_slice(prefix);
    if wrap {
        key.put_u8(b'{');
    }
    key.put_slice(resource);
    if wrap {
        key.put_u8(b'}');
    }
    // Without a tag here (a prefix ending in `{}`, a resource starting with `}`), the suffixed keys
    // would land in other slots on a cluster: refuse rather than fail there. With one, a suffix
    // cannot move it: the tag is the first `{...}`.
    if !has_hash_tag(&key) {
        return Err(LockError::InvalidInput(format!(
            "resource {:?} under prefix {:?} has no usable hash tag; avoid unbalanced braces",
            String::from_utf8_lossy(resource),
            String::from_utf8_lossy(prefix)
        )));
    }
    key.put_slice(suffix);
    Ok(key.freeze())
}

/// Whether keys derived from `key` (a resource's key, prefix included) by a suffix land in its
/// Cluster hash slot: always for tagged keys, and for plain ones when they carry a tag.
pub(crate) fn slot_safe(format: KeyFormat, key: &[u8]) -> bool {
    format == KeyFormat::Tagged || has_hash_tag(key)
}

/// The resource a key was built from (`key` without prefix or suffix).
pub(crate) fn resource_of(format: KeyFormat, key: &[u8], prefix_len: usize) -> &[u8] {
    let rest = &key[prefix_len.min(key.len())..];
    if format == KeyFormat::Plain {
        return rest;
    }
    match rest {
        [b'{', inner @ .., b'}'] if !has_hash_tag(inner) => inner,
        _ => rest,
    }
}

/// Whether every key lands in one Redis Cluster hash slot (a cluster runs a script only then).
pub(crate) fn one_slot(keys: &[Bytes]) -> bool {
    let mut slots = keys.iter().map(|k| redis_protocol::redis_keyslot(k));
    let first = slots.next();
    slots.all(|s| Some(s) == first)
}

/// Redis Cluster's rule: the tag is what lies between the first `{` and the next `}`, if non-empty.
pub(crate) fn has_hash_tag(key: &[u8]) -> bool {
    let Some(open) = key.iter().position(|&b| b == b'{') else {
        return false;
    };
    key[open + 1..]
        .iter()
        .position(|&b| b == b'}')
        .is_some_and(|len| len > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(key: &[u8]) -> u16 {
        redis_protocol::redis_keyslot(key)
    }

    #[test]
    fn every_key_of_a_lock_shares_the_resource_slot() {
        for resource in [&b"orders"[..], b"a}b", b"{x}y", b"x{y}z", b"{", b"a{}b"] {
            let main = key(KeyFormat::Tagged, b"redlock:", resource, b"").unwrap();
            for suffix in [&b":wait"[..], b":fence", b":rw:readers", b":rw:intent"] {
                let derived = key(KeyFormat::Tagged, b"redlock:", resource, suffix).unwrap();
                assert_eq!(slot(&main), slot(&derived), "{resource:?}{suffix:?}");
            }
            assert_eq!(
                resource_of(KeyFormat::Tagged, &main, 8),
                resource,
                "{resource:?}"
            );
        }
    }

    #[test]
    fn plain_names_are_wrapped_and_tagged_names_kept() {
        assert_eq!(
            &key(KeyFormat::Tagged, b"p:", b"orders", b"").unwrap()[..],
            b"p:{orders}"
        );
        assert_eq!(
            &key(KeyFormat::Tagged, b"p:", b"{order:7}:items", b":wait").unwrap()[..],
            b"p:{order:7}:items:wait"
        );
        let items = key(KeyFormat::Tagged, b"p:", b"{order:7}:items", b"").unwrap();
        let payment = key(KeyFormat::Tagged, b"p:", b"{order:7}:payment", b"").unwrap();
        assert_eq!(slot(&items), slot(&payment));
    }

    #[test]
    fn names_that_leave_no_tag_are_refused() {
        // `{}` is an empty tag: Redis hashes the whole key, so the suffixed keys would move.
        assert!(key(KeyFormat::Tagged, b"p{}", b"r", b"").is_err());
        assert!(key(KeyFormat::Tagged, b"p:", b"}r", b"").is_err());
        // A brace in the prefix is fine as long as a tag results.
        assert!(key(KeyFormat::Tagged, b"ok{", b"r", b"").is_ok());
    }

    #[test]
    fn plain_keys_are_the_name_and_need_a_tag_for_extra_keys() {
        let plain = |p: &[u8], r: &[u8], s: &[u8]| key(KeyFormat::Plain, p, r, s).unwrap();
        assert_eq!(&plain(b"", b"orders", b"")[..], b"orders");
        assert_eq!(
            &plain(b"app:", b"orders", b":fence")[..],
            b"app:orders:fence"
        );
        // Braces are the caller's: `{x}` and `x` are two locks here.
        assert_eq!(&plain(b"", b"{x}", b"")[..], b"{x}");
        assert_eq!(
            resource_of(KeyFormat::Plain, &plain(b"p:", b"{x}", b""), 2),
            b"{x}"
        );
        assert!(!slot_safe(KeyFormat::Plain, &plain(b"", b"orders", b"")));
        let tagged = plain(b"", b"{orders}", b"");
        assert!(slot_safe(KeyFormat::Plain, &tagged));
        assert_eq!(slot(&tagged), slot(&plain(b"", b"{orders}", b":fence")));
        assert!(slot_safe(KeyFormat::Tagged, b"redlock:{orders}"));
    }
}
