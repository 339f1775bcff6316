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

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::LockError;

/// Builds the key of `resource` under `prefix`, followed by `suffix`.
pub(crate) fn key(prefix: &[u8], resource: &[u8], suffix: &[u8]) -> Result<Bytes, LockError> {
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

/// The resource a key was built from (`key` without prefix or suffix).
pub(crate) fn resource_of(key: &[u8], prefix_len: usize) -> &[u8] {
    let rest = &key[prefix_len.min(key.len())..];
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
            let main = key(b"redlock:", resource, b"").unwrap();
            for suffix in [&b":wait"[..], b":fence", b":rw:readers", b":rw:intent"] {
                let derived = key(b"redlock:", resource, suffix).unwrap();
                assert_eq!(slot(&main), slot(&derived), "{resource:?}{suffix:?}");
            }
            assert_eq!(resource_of(&main, 8), resource, "{resource:?}");
        }
    }

    #[test]
    fn plain_names_are_wrapped_and_tagged_names_kept() {
        assert_eq!(&key(b"p:", b"orders", b"").unwrap()[..], b"p:{orders}");
        assert_eq!(
            &key(b"p:", b"{order:7}:items", b":wait").unwrap()[..],
            b"p:{order:7}:items:wait"
        );
        let items = key(b"p:", b"{order:7}:items", b"").unwrap();
        let payment = key(b"p:", b"{order:7}:payment", b"").unwrap();
        assert_eq!(slot(&items), slot(&payment));
    }

    #[test]
    fn names_that_leave_no_tag_are_refused() {
        // `{}` is an empty tag: Redis hashes the whole key, so the suffixed keys would move.
        assert!(key(b"p{}", b"r", b"").is_err());
        assert!(key(b"p:", b"}r", b"").is_err());
        // A brace in the prefix is fine as long as a tag results.
        assert!(key(b"ok{", b"r", b"").is_ok());
    }
}
