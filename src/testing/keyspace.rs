//! A memory node's keys: each a string, a sorted set or a hash, with an optional expiry — an
//! absolute time in the node's ms (`super::clock`), as Redis keeps it. Expiry is lazy, as Redis's
//! is where it can be seen: a key whose time has passed is gone when it is next looked up, whatever
//! looks (`now > expiry`, so a key lives through its last millisecond, as in Redis's
//! `keyIsExpired`).

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

use super::reply::{wrong_type, Reply};
use super::zset::SortedSet;

/// What a key holds.
#[derive(Debug, Clone)]
pub(crate) enum Data {
    Str(Bytes),
    ZSet(SortedSet),
    /// Ordered by field so a snapshot reads the same on every run.
    Hash(BTreeMap<Bytes, Bytes>),
}

impl Data {
    /// The sorted set this is, if it is one.
    pub(crate) fn as_zset(&mut self) -> Option<&mut SortedSet> {
        match self {
            Self::ZSet(z) => Some(z),
            _ => None,
        }
    }

    /// The hash this is, if it is one.
    pub(crate) fn as_hash(&mut self) -> Option<&mut BTreeMap<Bytes, Bytes>> {
        match self {
            Self::Hash(h) => Some(h),
            _ => None,
        }
    }

    /// Its name as `TYPE` answers it.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Self::Str(_) => "string",
            Self::ZSet(_) => "zset",
            Self::Hash(_) => "hash",
        }
    }

    /// Whether it holds nothing: Redis deletes a collection with its last element.
    fn is_empty(&self) -> bool {
        match self {
            Self::Str(_) => false,
            Self::ZSet(z) => z.is_empty(),
            Self::Hash(h) => h.is_empty(),
        }
    }
}

/// One key.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) data: Data,
    /// When it expires, in the node's ms; `None`: never.
    pub(crate) expires_at: Option<i64>,
}

/// The keys of the node's one database, and the time the command running now reads them at.
#[derive(Debug, Default)]
pub(crate) struct Keyspace {
    map: HashMap<Bytes, Entry>,
    /// The node's ms for the command running now (a whole script reads one, as Redis's scripts do).
    pub(crate) now: i64,
}

impl Keyspace {
    /// The live entry at `key`; an expired one is removed first.
    pub(crate) fn get(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let now = self.now;
        if self
            .map
            .get(key)
            .is_some_and(|e| e.expires_at.is_some_and(|at| now > at))
        {
            self.map.remove(key);
        }
        self.map.get_mut(key)
    }

    /// Whether `key` is live.
    pub(crate) fn exists(&mut self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Puts `entry` at `key`, replacing whatever was there.
    pub(crate) fn set(&mut self, key: Bytes, entry: Entry) {
        self.map.insert(key, entry);
    }

    /// Removes `key`; whether it was live.
    pub(crate) fn remove(&mut self, key: &[u8]) -> bool {
        let live = self.exists(key);
        self.map.remove(key);
        live
    }

    /// Removes every key.
    pub(crate) fn clear(&mut self) {
        self.map.clear();
    }

    /// Every live key (expired ones are dropped on the way).
    pub(crate) fn live_keys(&mut self) -> Vec<Bytes> {
        let now = self.now;
        self.map
            .retain(|_, e| e.expires_at.is_none_or(|at| now <= at));
        self.map.keys().cloned().collect()
    }

    /// The string at `key`: `Ok(None)` when missing, `Err` (`WRONGTYPE`) for another type.
    pub(crate) fn string(&mut self, key: &[u8]) -> Result<Option<Bytes>, Reply> {
        match self.get(key) {
            None => Ok(None),
            Some(Entry {
                data: Data::Str(v), ..
            }) => Ok(Some(v.clone())),
            Some(_) => Err(wrong_type()),
        }
    }

    /// The sorted set at `key` to read: `Ok(None)` when missing.
    pub(crate) fn zset(&mut self, key: &[u8]) -> Result<Option<&mut SortedSet>, Reply> {
        self.typed(key, Data::as_zset)
    }

    /// The hash at `key` to read: `Ok(None)` when missing.
    pub(crate) fn hash(
        &mut self,
        key: &[u8],
    ) -> Result<Option<&mut BTreeMap<Bytes, Bytes>>, Reply> {
        self.typed(key, Data::as_hash)
    }

    /// The data at `key` that `pick` finds in it, to read: `Ok(None)` when missing, `Err` for a key of
    /// another type (every typed read answers these alike).
    fn typed<T>(
        &mut self,
        key: &[u8],
        pick: fn(&mut Data) -> Option<&mut T>,
    ) -> Result<Option<&mut T>, Reply> {
        match self.get(key) {
            None => Ok(None),
            Some(entry) => pick(&mut entry.data).map(Some).ok_or_else(wrong_type),
        }
    }

    /// The collection at `key` to write, made (empty, no expiry) when missing; `Err` for another
    /// type. `make` builds the empty one and `pick` finds it in a key's data.
    pub(crate) fn collection<T>(
        &mut self,
        key: &Bytes,
        make: fn() -> Data,
        pick: fn(&mut Data) -> Option<&mut T>,
    ) -> Result<&mut T, Reply> {
        if self.get(key).is_none() {
            self.map.insert(
                key.clone(),
                Entry {
                    data: make(),
                    expires_at: None,
                },
            );
        }
        let entry = self.map.get_mut(key).expect("just made");
        pick(&mut entry.data).ok_or_else(wrong_type)
    }

    /// Deletes `key` if it is a collection left empty by a write (Redis never keeps an empty one).
    pub(crate) fn drop_if_empty(&mut self, key: &[u8]) {
        if self.map.get(key).is_some_and(|e| e.data.is_empty()) {
            self.map.remove(key);
        }
    }
}
