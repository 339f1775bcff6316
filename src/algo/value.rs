//! The lock value: 20 random bytes from the OS CSPRNG, fresh for every attempt.
//!
//! The value proves ownership to the release and extend scripts, so it is a bearer secret: callers never
//! choose it, and `Debug` never prints it.

use std::fmt;

/// Length of a lock value in bytes (160 bits, as the Redlock design suggests).
pub(crate) const VALUE_LEN: usize = 20;

/// A lock's ownership token.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LockValue([u8; VALUE_LEN]);

impl LockValue {
    /// A placeholder for script calls that ignore the value (a writer withdrawing its intent).
    pub(crate) const ZERO: Self = Self([0; VALUE_LEN]);

    /// Draws a fresh value from the operating system's CSPRNG.
    pub fn random() -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; VALUE_LEN];
        getrandom::fill(&mut bytes)?;
        Ok(Self(bytes))
    }

    /// The raw bytes (crate-internal use and benches only; never log them).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
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
}
