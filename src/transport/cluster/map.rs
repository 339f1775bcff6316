//! The slot map one cluster node set routes by: which shard master serves each of the 16384 hash
//! slots, and that master's pipelined connection.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

use super::topology::SLOTS;
use crate::protocol::cmd::Cmd;
use crate::transport::pipeline::PipelineNode;

/// A slot no shard serves (yet).
const UNSERVED: u16 = u16::MAX;

/// One shard master and the engine's connection to it.
#[derive(Debug)]
pub(super) struct Shard {
    pub(super) master: (String, u16),
    pub(super) conn: Arc<PipelineNode>,
    /// Slots it served when the map was read (a `MOVED` may have moved some since).
    pub(super) ranges: Vec<(u16, u16)>,
}

/// Slot → shard, read on every command (an atomic load); replaced whole when the topology is read
/// again, patched one slot at a time by `MOVED`.
#[derive(Debug)]
pub(super) struct Map {
    slots: Box<[AtomicU16]>,
    pub(super) shards: Vec<Shard>,
}

impl Map {
    /// A map that routes nothing (before the first topology read).
    pub(super) fn empty() -> Self {
        Self::new(Vec::new())
    }

    pub(super) fn new(shards: Vec<Shard>) -> Self {
        let slots: Box<[AtomicU16]> = (0..SLOTS).map(|_| AtomicU16::new(UNSERVED)).collect();
        for (index, shard) in shards.iter().enumerate() {
            for &(start, end) in &shard.ranges {
                for slot in start..=end {
                    // `topology` checked every bound; `Map` never has more than 16384 shards.
                    if let Some(s) = slots.get(usize::from(slot)) {
                        s.store(index as u16, Ordering::Relaxed);
                    }
                }
            }
        }
        Self { slots, shards }
    }

    /// The shard serving `slot`, if any.
    pub(super) fn shard_of(&self, slot: u16) -> Option<&Shard> {
        let index = self.slots.get(usize::from(slot))?.load(Ordering::Relaxed);
        self.shards.get(usize::from(index))
    }

    /// The shard whose master is `master`, and its index.
    pub(super) fn find(&self, master: &(String, u16)) -> Option<(usize, &Shard)> {
        self.shards
            .iter()
            .enumerate()
            .find(|(_, s)| s.master.0.eq_ignore_ascii_case(&master.0) && s.master.1 == master.1)
    }

    /// `MOVED`: `slot` is served by shard `index` from now on.
    pub(super) fn point(&self, slot: u16, index: usize) {
        if let (Some(s), Ok(index)) = (self.slots.get(usize::from(slot)), u16::try_from(index)) {
            s.store(index, Ordering::Relaxed);
        }
    }

    /// How many slots shard `index` serves now.
    pub(super) fn count(&self, index: usize) -> usize {
        self.slots
            .iter()
            .filter(|s| usize::from(s.load(Ordering::Relaxed)) == index)
            .count()
    }
}

/// The hash slot a command's keys are in: its first key's (every key of one lock shares it, see
/// `crate::algo::keys`); `None` for a command without keys.
pub(super) fn slot_of(cmd: &Cmd) -> Option<u16> {
    let key = match cmd {
        Cmd::SetNxPx { key, .. } => key,
        Cmd::Script { keys, .. } | Cmd::ScriptBytes { keys, .. } => keys.as_slice().first()?,
        Cmd::ExtendMany { locks, .. } => &locks.first()?.key,
        Cmd::ReleaseMany { locks, .. } => &locks.first()?.0,
        Cmd::ScriptLoad(_) | Cmd::InfoServer => return None,
    };
    Some(redis_protocol::redis_keyslot(key))
}
