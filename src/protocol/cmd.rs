//! What the engine sends and what it reads back, whatever carries it: a [`Cmd`] (an operation on a
//! node: `SET NX PX`, a script call, a coalesced call), the [`Script`] it may run, its [`Keys`] and
//! [`Args`], and the [`Reply`] reduced to what the algorithm looks at.

use bytes::Bytes;

/// The reply types live with the algorithm that reads them (`crate::algo::reply`).
pub(crate) use crate::algo::reply::{NodeResult, Reply};
use crate::algo::value::LockValue;

/// A command the algorithm sends to a node. Cheap to clone: keys are `Bytes`, the value is 25 bytes.
#[derive(Debug, Clone)]
pub(crate) enum Cmd {
    /// `SET key value NX PX ttl_ms`.
    SetNxPx {
        key: Bytes,
        value: LockValue,
        ttl_ms: u64,
    },
    /// `EVALSHA sha numkeys keys... value args...`.
    Script {
        script: &'static Script,
        keys: Keys,
        value: LockValue,
        args: Args,
    },
    /// `EVALSHA` of a coalesced extend script (the exclusive kind's `EXTEND_MANY`): several locks
    /// extended in one call (`KEYS` = their keys, `ARGV` = value and TTL ms per lock). The watchdog's
    /// coalesced renewal.
    ExtendMany {
        script: &'static Script,
        locks: std::sync::Arc<[Extend]>,
    },
    /// `EVALSHA` of a coalesced release (`KEYS` = the locks' keys, `ARGV` = their values): releases
    /// queued back to back on one pipelined connection, sent as one call (see [`Coalesced`]). Built
    /// by the transport only, never by the algorithm. `keys_in_argv`: no declared key, `ARGV` = the
    /// keys then the values (a cluster shard's form, [`Coalesced::any_slot`]).
    ReleaseMany {
        script: &'static Script,
        locks: std::sync::Arc<[(Bytes, LockValue)]>,
        keys_in_argv: bool,
    },
    /// `EVALSHA sha numkeys keys... args...` with byte arguments: the operator's scripts (inspect,
    /// forced release) and the labeled acquire, off the hot path.
    ScriptBytes {
        script: &'static Script,
        keys: Keys,
        args: std::sync::Arc<[Bytes]>,
    },
    /// `SCRIPT LOAD source`: puts a script back into a node's cache after `NOSCRIPT`.
    ScriptLoad(&'static Script),
    /// `INFO server`. Part of the node interface for the crashed-node quarantine (server identity and
    /// uptime); the lock algorithm does not send it yet.
    #[allow(dead_code)]
    InfoServer,
}

impl Cmd {
    /// Whether this command can grant a lock (`SET NX`, or an acquire-side script, the ones never
    /// resent): the clock guard reads the node's `TIME` just before those.
    pub(crate) fn is_acquire(&self) -> bool {
        match self {
            Self::SetNxPx { .. } => true,
            Self::Script { script, .. } | Self::ScriptBytes { script, .. } => !script.resend,
            _ => false,
        }
    }

    /// The script this command runs, if it is a script call (resent as `EVAL` on `NOSCRIPT`).
    pub(crate) fn script(&self) -> Option<&'static Script> {
        match self {
            Self::Script { script, .. } => Some(script),
            Self::ExtendMany { script, .. } => Some(script),
            Self::ReleaseMany { script, .. } => Some(script),
            Self::ScriptBytes { script, .. } => Some(script),
            _ => None,
        }
    }
}

/// A Lua script sent with `EVALSHA`, falling back to `EVAL` when a node answers `NOSCRIPT`. Each lock
/// kind defines its own (see `crate::kinds`); every connection's handshake loads the list it is given
/// in `ConnectOptions::scripts`.
#[derive(Debug)]
pub(crate) struct Script {
    pub(crate) source: &'static str,
    pub(crate) sha1: &'static str,
    /// Whether a `NOSCRIPT` answer may be followed by `EVAL` of the source. The resend joins the back
    /// of the connection's queue, behind commands sent later; that is harmless for owner-checked
    /// release/extend/marker scripts, but an acquire resent behind its own release would set keys
    /// nobody releases. Those fail the node's vote instead, and the connection reloads the script.
    pub(crate) resend: bool,
    /// The operation it performs, which a server's dialect may render in another form
    /// (`super::render`); [`Op::Own`] for a kind's own, sent as the script everywhere.
    pub(crate) op: Op,
}

impl Script {
    /// A script built at run time from `source` (one made of the kinds' parts: inspect's, the
    /// forced release): resent on `NOSCRIPT` (it only reads, or breaks a lock whatever its value),
    /// a kind's own operation. Built once per list of kinds, its source and digest live as long as
    /// the program: the handshake loads it like any other script.
    pub(crate) fn built(source: String) -> &'static Script {
        let sha1 = sha1_smol::Sha1::from(source.as_bytes())
            .digest()
            .to_string();
        Box::leak(Box::new(Script {
            source: Box::leak(source.into_boxed_str()),
            sha1: Box::leak(sha1.into_boxed_str()),
            resend: true,
            op: Op::Own,
        }))
    }
}

/// An operation a script performs, named so that a connection can render it as its server takes it
/// (`super::render`): the shared single-key operations and the plain lock's hand-off, which have
/// native forms on some servers, and every other script, a kind's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// A kind's own operation: only ever its script.
    Own,
    /// Owner-checked release of one key (`RELEASE`).
    Release,
    /// The release that also wakes the first waiter elsewhere (`RELEASE_NOTIFY`).
    ReleaseNotify,
    /// Owner-checked extend of one key (`EXTEND`).
    Extend,
    /// The waiter mark (`MARK_WAITING`).
    Mark,
    /// The watchdog's coalesced extend (`EXTEND_MANY`).
    ExtendMany,
    /// The transport's coalesced releases (`RELEASE_MANY` and its forms), by whether they wake
    /// waiters and whether their keys travel in `ARGV` (a cluster shard's form).
    ReleaseMany,
    ReleaseNotifyMany,
    ReleaseManyAnySlot,
    ReleaseNotifyManyAnySlot,
    /// The plain lock's cross-process hand-off (`crate::protocol::handoff`).
    TakeOver,
    ReleaseHandoff,
    ReleaseTo,
    StepBack,
    Unmark,
}

/// A single-lock script the pipelined transport may coalesce, and its many-lock form: one call over
/// several keys that answers one character per lock, exactly what the single calls would answer in
/// the same order (the lock kinds say which: `crate::kinds::exclusive::COALESCED`).
#[derive(Debug)]
pub(crate) struct Coalesced {
    pub(crate) one: &'static Script,
    pub(crate) many: &'static Script,
    /// `many` for a cluster shard: the same answers over keys of any slots it serves, sent with
    /// the keys in `ARGV` (a declared key set must be one slot), plus `m` for a key the node does
    /// not serve now, which nothing was done to.
    pub(crate) any_slot: &'static Script,
}

/// One lock of a coalesced extend: its key, its value, its new TTL.
#[derive(Debug, Clone)]
pub(crate) struct Extend {
    pub(crate) key: Bytes,
    pub(crate) value: LockValue,
    pub(crate) ttl_ms: u64,
}

/// The keys of a script call: one (the common case, no allocation) or several (multi-resource locks).
#[derive(Debug, Clone)]
pub(crate) enum Keys {
    One(Bytes),
    Many(std::sync::Arc<[Bytes]>),
}

impl Keys {
    pub(crate) fn as_slice(&self) -> &[Bytes] {
        match self {
            Self::One(key) => std::slice::from_ref(key),
            Self::Many(keys) => keys,
        }
    }
}

/// Most keys one script call may carry (bounds the stack frame the encoder builds).
pub(crate) const MAX_SCRIPT_KEYS: usize = 16;

/// Most numeric script arguments one command carries after its value (the hand-off's step back).
pub(crate) const MAX_NUMS: usize = 6;

/// Numeric script arguments after the lock value (at most [`MAX_NUMS`]), kept inline.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Args {
    len: u8,
    values: [u64; MAX_NUMS],
}

impl Args {
    /// No arguments after the value.
    pub(crate) const NONE: Self = Self {
        len: 0,
        values: [0; MAX_NUMS],
    };

    /// The given arguments (at most 6; more is a programming error caught in debug builds).
    pub(crate) fn of(values: &[u64]) -> Self {
        debug_assert!(values.len() <= MAX_NUMS);
        let mut args = Self::NONE;
        for (slot, v) in args.values.iter_mut().zip(values) {
            *slot = *v;
            args.len += 1;
        }
        args
    }

    pub(crate) fn as_slice(&self) -> &[u64] {
        &self.values[..self.len as usize]
    }
}

/// `EVALSHA script` on `keys`, with the lock value and `args`.
pub(crate) fn script_cmd(
    script: &'static Script,
    keys: &Keys,
    value: LockValue,
    args: Args,
) -> Cmd {
    Cmd::Script {
        script,
        keys: keys.clone(),
        value,
        args,
    }
}
