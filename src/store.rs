//! Fenced writes to a Redis store ([`FencedStore`]): a value is stored only with a fencing token
//! not below the one it was last stored with, so a holder that paused past its lock's validity
//! cannot overwrite what a later holder wrote. Seed 001's "optimistic lock" as the store's own rule,
//! closing the loop [`crate::Lock::fencing_token`] opens.
//!
//! Each stored key is a hash: the value (`v`) and the token it was written with (`t`, 20 decimal
//! digits, zero-padded, so Lua compares two tokens as strings exactly, whatever their size: no
//! token passes through a double). The write is one script: compare, then set, atomically on the
//! store. Equal tokens are accepted (one holder writing twice); a lower one is
//! [`Written::Rejected`], with the token that won.
//!
//! The store is one Redis server (any address the engine takes: a lock node or not), reached on
//! the engine's own pipelined connection with its TLS and credentials. A write is never sent again
//! after it may have run: a lost connection fails it ([`LockError::QuorumNotReached`] naming the
//! cause), and the caller decides (the token makes a retry safe against other holders).

use std::sync::Arc;

use bytes::Bytes;

use crate::addr::NodeAddr;
use crate::engine::Redlock;
use crate::error::{LockError, NodeError};
use crate::protocol::cmd::{Cmd, Keys, NodeResult, Op, Reply, Script};
use crate::transport::{self, NodeClient, Transport};

/// The fenced write: KEYS = the stored key; ARGV = value, the 20-digit token. Answers 1 (stored) or
/// the stored token that is higher (rejected).
static FENCED_SET: Script = Script {
    source: "local c = redis.call('HGET', KEYS[1], 't') if c and c > ARGV[2] then return c end redis.call('HSET', KEYS[1], 'v', ARGV[1], 't', ARGV[2]) return 1",
    sha1: "6cc018aeccebe572d1c06bd778d61142ab22db19",
    resend: true,
    op: Op::Own,
};

/// The fenced read: KEYS = the stored key. Answers `<token>:<value>`, or nil when never written
/// (or not by [`FENCED_SET`]).
static FENCED_GET: Script = Script {
    source: "local r = redis.call('HMGET', KEYS[1], 'v', 't') if not r[1] or not r[2] then return false end return r[2] .. ':' .. r[1]",
    sha1: "4a901865aebd84c605957d480ac5c7a26841323d",
    resend: true,
    op: Op::Own,
};

/// What the store's handshake loads.
static STORE_SCRIPTS: &[&Script] = &[&FENCED_SET, &FENCED_GET];

/// What a [`FencedStore::set`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Stored with the token given.
    Stored,
    /// Not stored: a write with a higher token (a later holder's) came first.
    Rejected {
        /// The token the stored value was written with.
        newer: u64,
    },
}

/// A Redis store that takes fenced writes (see the module doc). Cheap to clone.
#[derive(Clone)]
pub struct FencedStore {
    node: Arc<dyn NodeClient>,
    /// Shown without its credentials (`NodeAddr`'s `Display`).
    addr: NodeAddr,
}

impl std::fmt::Debug for FencedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("FencedStore")
            .field(&self.addr.to_string())
            .finish()
    }
}

impl Redlock {
    /// A store at `url` (`redis://` or `rediss://`, with this engine's TLS and timeouts) for
    /// values written under fencing tokens.
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// use redlock_engine::Written;
    /// let store = redlock.fenced_store("redis://127.0.0.1:6390").await?;
    /// let guard = redlock.lock("ledger").fenced().await?;
    /// let token = guard.fencing_token().expect("a fenced lock has a token");
    /// match store.set("ledger:balance", "100", token).await? {
    ///     Written::Stored => {}
    ///     // A later holder wrote first: this holder's lock ran out while it worked.
    ///     Written::Rejected { newer } => eprintln!("stale write refused (token {newer} won)"),
    /// }
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`LockError::InvalidConfig`] for a URL that is not a single standalone node.
    pub async fn fenced_store(&self, url: &str) -> Result<FencedStore, LockError> {
        let addr = NodeAddr::parse(url).map_err(LockError::InvalidConfig)?;
        if addr.topology != crate::addr::Topology::Standalone {
            return Err(LockError::InvalidConfig(format!(
                "a fenced store is one standalone node, not {}",
                addr
            )));
        }
        let s = self.core().settings();
        let mut opts = s.connect.clone();
        // The store holds no lock: no clock guard, no quarantine, only its own scripts.
        opts.clock_guard = None;
        opts.quarantine = None;
        opts.native = false;
        opts.scripts = STORE_SCRIPTS;
        opts.coalesce = &[];
        let node = transport::connect(Transport::Pipeline, addr.clone(), &opts).await;
        Ok(FencedStore { node, addr })
    }
}

impl FencedStore {
    /// Stores `value` at `key` if `token` is not below the token the key was last written with.
    ///
    /// # Errors
    /// The store did not answer, or answered an error ([`LockError::QuorumNotReached`] with its
    /// cause); the write may or may not have been stored.
    pub async fn set(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        token: u64,
    ) -> Result<Written, LockError> {
        let reply = self
            .call(
                &FENCED_SET,
                key.as_ref(),
                vec![Bytes::copy_from_slice(value.as_ref()), padded(token)],
            )
            .await?;
        match reply {
            Reply::Int(1) => Ok(Written::Stored),
            Reply::Data(newer) => parse_token(&newer)
                .map(|newer| Written::Rejected { newer })
                .ok_or_else(|| failed(NodeError::Protocol("fenced write: not a token".into()))),
            other => Err(failed(other.unexpected("fenced write"))),
        }
    }

    /// The value at `key` and the token it was written with (`None`: never written).
    ///
    /// # Errors
    /// As [`set`](Self::set).
    pub async fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<(Bytes, u64)>, LockError> {
        match self.call(&FENCED_GET, key.as_ref(), Vec::new()).await? {
            Reply::Nil => Ok(None),
            Reply::Data(data) => {
                let colon = data.iter().position(|&b| b == b':');
                let parsed =
                    colon.and_then(|i| Some((data.slice(i + 1..), parse_token(&data[..i])?)));
                parsed.map(Some).ok_or_else(|| {
                    failed(NodeError::Protocol("fenced read: not of its format".into()))
                })
            }
            other => Err(failed(other.unexpected("fenced read"))),
        }
    }

    async fn call(
        &self,
        script: &'static Script,
        key: &[u8],
        args: Vec<Bytes>,
    ) -> Result<Reply, LockError> {
        let cmd = Cmd::ScriptBytes {
            script,
            keys: Keys::One(Bytes::copy_from_slice(key)),
            args: Arc::from(args),
        };
        let result: NodeResult = self.node.send(&cmd).await;
        result.map_err(failed)
    }
}

/// A token as the scripts compare it: 20 decimal digits, zero-padded.
fn padded(token: u64) -> Bytes {
    Bytes::from(format!("{token:020}"))
}

fn parse_token(digits: &[u8]) -> Option<u64> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The store's failure, as the lock errors say a node's.
fn failed(cause: NodeError) -> LockError {
    LockError::QuorumNotReached {
        ok: 0,
        needed: 1,
        failures: vec![(0, cause)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `EVALSHA` sends the constant: a stale one would fall back to `EVAL` on every call unseen.
    #[test]
    fn the_scripts_digests_match_their_sources() {
        for script in STORE_SCRIPTS {
            let digest = sha1_smol::Sha1::from(script.source).digest().to_string();
            assert_eq!(script.sha1, digest, "{}", script.source);
        }
    }

    #[test]
    fn tokens_are_compared_as_20_digit_strings() {
        assert_eq!(&padded(42)[..], b"00000000000000000042");
        assert_eq!(padded(u64::MAX).len(), 20);
        assert_eq!(parse_token(b"00000000000000000042"), Some(42));
    }
}
