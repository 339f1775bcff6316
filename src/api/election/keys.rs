//! What every part of an election checks before anything is sent, and the keys it works on: the
//! lock key (the fenced lock's: an election named NAME is the fenced lock on NAME) and the leader
//! record beside it, in the same Cluster hash slot.

use std::sync::Arc;

use bytes::Bytes;

use crate::engine::core::Core;
use crate::error::LockError;
use crate::protocol::cmd::Keys;

/// Fewest nodes an election runs on: with fewer, one node's failure stops every election (a
/// majority of two is both), which is what electing a leader is meant to survive.
pub(crate) const MIN_NODES: usize = 3;

/// Longest value a leader publishes: it is read back by every observer on every change.
pub(crate) const MAX_VALUE_LEN: usize = 64 * 1024;

/// The leader record's suffix (see `super::scripts`).
const LEADER_SUFFIX: &[u8] = b":leader";

/// An election's keys on every node.
#[derive(Debug, Clone)]
pub(super) struct ElectionKeys {
    /// `prefix{name}`: the fenced lock's key.
    pub(super) lock: Bytes,
    /// `prefix{name}:leader`: the leader record, and the channel its changes are published on.
    pub(super) record: Bytes,
}

impl ElectionKeys {
    /// The keys of the election `name`; refuses a name no resource may have.
    pub(super) fn of(core: &Core, name: &[u8]) -> Result<Self, LockError> {
        Ok(Self {
            lock: core.key(name, b"")?,
            record: core.key(name, LEADER_SUFFIX)?,
        })
    }

    /// Both, as a script takes them: the lock key, then the record.
    pub(super) fn both(&self) -> Keys {
        Keys::Many(Arc::from([self.lock.clone(), self.record.clone()]))
    }
}

/// Refuses a value a leader may not publish: empty, above [`MAX_VALUE_LEN`], or with a NUL byte
/// (a value is handed to commands as an environment variable, which cannot hold one).
pub(super) fn check_value(value: &[u8]) -> Result<(), LockError> {
    if value.is_empty() {
        return Err(LockError::InvalidInput(
            "a leader's value is empty: give it something observers can use (an address, a \
             name)"
                .into(),
        ));
    }
    if value.len() > MAX_VALUE_LEN {
        return Err(LockError::InvalidInput(format!(
            "a leader's value is {} bytes, the limit is {MAX_VALUE_LEN}",
            value.len()
        )));
    }
    if value.contains(&0) {
        return Err(LockError::InvalidInput(
            "a leader's value contains a NUL byte".into(),
        ));
    }
    Ok(())
}

/// Refuses a campaign on fewer than [`MIN_NODES`] nodes.
pub(super) fn check_nodes(core: &Core) -> Result<(), LockError> {
    let nodes = core.nodes().len();
    if nodes < MIN_NODES {
        return Err(LockError::InvalidConfig(format!(
            "an election needs at least {MIN_NODES} nodes, this engine has {nodes}: with fewer, \
             one node's failure stops every election"
        )));
    }
    Ok(())
}

/// A term or revision as the scripts compare them: 20 decimal digits, zero-padded.
pub(super) fn padded(n: u64) -> Bytes {
    Bytes::from(format!("{n:020}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_bounded() {
        assert!(check_value(b"10.0.0.7:8080").is_ok());
        assert!(check_value(&vec![b'x'; MAX_VALUE_LEN]).is_ok());
        for bad in [&b""[..], &vec![b'x'; MAX_VALUE_LEN + 1], b"a\0b"] {
            assert!(matches!(check_value(bad), Err(LockError::InvalidInput(_))));
        }
        assert_eq!(&padded(42)[..], b"00000000000000000042");
        assert_eq!(padded(u64::MAX).len(), 20);
    }
}
