//! The lock value: the engine's 8-byte tag, one byte naming the kind of lock, then 16 random bytes
//! from the OS CSPRNG, fresh for every attempt.
//!
//! The value proves ownership to the release and extend scripts, so it is a bearer secret: callers never
//! choose it, and `Debug` never prints it. Its 128 random bits are the secret; the tag and the kind
//! byte are not. They are there so an operator's inspect script can say, on the node and without
//! returning the value, whether a lock is this engine's (`ARGV` carries the tag, the script compares
//! the value's first bytes) and which kind of lock it is.

use std::fmt;

/// Length of the engine tag that starts every value an engine draws.
pub(crate) const TAG_LEN: usize = 8;

/// Random bytes after the tag and the kind byte (128 bits).
pub(crate) const RANDOM_LEN: usize = 16;

/// Length of a lock value in bytes: tag, kind byte, random part.
pub(crate) const VALUE_LEN: usize = TAG_LEN + 1 + RANDOM_LEN;

/// A lock's ownership token.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LockValue([u8; VALUE_LEN]);

/// A random tag drawn once per engine: every value it draws starts with it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct EngineTag(pub(crate) [u8; TAG_LEN]);

impl EngineTag {
    /// The tag as 16 hex digits: the engine's name in its metrics (not a secret: every value it draws
    /// starts with it, and `inspect` shows whose a lock is by it).
    pub(crate) fn hex(&self) -> String {
        format!("{:016x}", u64::from_be_bytes(self.0))
    }

    /// Draws a fresh tag from the operating system's CSPRNG.
    pub(crate) fn random() -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; TAG_LEN];
        getrandom::fill(&mut bytes)?;
        Ok(Self(bytes))
    }
}

impl fmt::Debug for EngineTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not a secret, but nothing to read in it either.
        f.write_str("EngineTag(..)")
    }
}

impl LockValue {
    /// A placeholder for script calls that ignore the value (a writer withdrawing its intent).
    pub(crate) const ZERO: Self = Self([0; VALUE_LEN]);

    /// Draws a fully random value (no tag; the benches and loadgen's raw engine).
    pub fn random() -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; VALUE_LEN];
        getrandom::fill(&mut bytes)?;
        Ok(Self(bytes))
    }

    /// Draws a fresh value of engine `tag` for a lock of kind `kind` (a byte, see
    /// `crate::engine::inspect::kind_code`).
    pub(crate) fn tagged(tag: EngineTag, kind: u8) -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; VALUE_LEN];
        bytes[..TAG_LEN].copy_from_slice(&tag.0);
        bytes[TAG_LEN] = kind;
        getrandom::fill(&mut bytes[TAG_LEN + 1..])?;
        Ok(Self(bytes))
    }

    /// The raw bytes (crate-internal use and benches only; never log them).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// This value with its last byte set to `epoch`: the values of one wait of the plain lock's
    /// hand-off (`crate::protocol::handoff`), which differ in that byte only, so the nodes can tell
    /// an earlier one of the same wait from another owner's. The other 15 random bytes (120 bits)
    /// stay the secret.
    pub(crate) fn with_epoch(mut self, epoch: u8) -> Self {
        self.0[VALUE_LEN - 1] = epoch;
        self
    }
}

impl fmt::Debug for LockValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never log the value: anyone who has it can release or extend the lock.
        f.write_str("LockValue(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_differ_and_debug_redacts() {
        let a = LockValue::random().unwrap();
        let b = LockValue::random().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.as_bytes().len(), VALUE_LEN);
        assert_eq!(format!("{a:?}"), "LockValue(<redacted>)");
    }

    #[test]
    fn tagged_values_start_with_the_tag_and_kind_and_keep_128_random_bits() {
        let tag = EngineTag::random().unwrap();
        let a = LockValue::tagged(tag, b'x').unwrap();
        let b = LockValue::tagged(tag, b'x').unwrap();
        assert_eq!(&a.as_bytes()[..TAG_LEN], &tag.0);
        assert_eq!(a.as_bytes()[TAG_LEN], b'x');
        assert_ne!(a, b, "the random part differs");
        assert_eq!(a.as_bytes().len() - TAG_LEN - 1, 16);
        assert_ne!(EngineTag::random().unwrap(), tag);
    }
}
