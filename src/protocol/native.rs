//! Native lock commands: the shared single-key scripts' operations (`crate::protocol::scripts`) as a
//! server with compare-and-set commands takes them (Valkey 9: `DELIFEQ`, `SET ... IFEQ ... GET`), and
//! how their replies read as the script's answer. No I/O: the connection encodes a [`Native`]'s
//! commands back to back and hands their replies to [`Native::answer`].
//!
//! # Why the engine reads exactly what the script would have answered
//! The engine, its tallies and its errors read every release and extend as the scripts answer them
//! (`1` ours, `2` ours and a waiter was told, `0` gone, `-1` someone else's; `WRONGTYPE` a key of
//! another type, read as someone else's). Each native form answers the same, for the same state:
//! - **Extend** (`EXTEND`): `SET key value IFEQ value GET PX ttl` runs as one command and returns
//!   the value that was there: ours (the TTL was reset: `1`), nil (gone: `0`, nothing created), or
//!   another owner's (untouched: `-1`). A key of another type answers `WRONGTYPE`, as the script's
//!   `GET` does. One command tells all three cases.
//! - **Release** (`RELEASE`): `DELIFEQ key value` answers `1` (ours, deleted) or `0`, which is both
//!   "gone" and "someone else's". A `0` is told apart by an `EXISTS key` sent after it on the same
//!   connection ([`Answer::Then`]): the `DELIFEQ` found our value absent, and our value never comes
//!   back to a key (each attempt draws a fresh one, and our own `SET NX` ran before the release on
//!   this FIFO connection), so at the `EXISTS` our value is still absent, and `EXISTS` answers what
//!   the script would have answered had it run then: `0` gone, `1` someone else's. The pair is
//!   thus the script run at the `DELIFEQ` (when it deleted) or at the `EXISTS` (when it did not):
//!   the release tally (`Tally::for_release`: a "gone" counts toward the goal, "someone else's"
//!   against) and `NotOwner` vs `AlreadyExpired` (`algo::verdict::owner_error`) come out as with
//!   the script. The `EXISTS` is a new read, never the release sent again; were the connection lost
//!   before its answer, the node's vote is a failure, as for any lost reply. It costs a round trip
//!   only where our key was not (an expired lock, a node the acquire missed): a release on a
//!   majority that held it is decided by the `1`s.
//! - **Release that wakes waiters** (`RELEASE_NOTIFY`): `DELIFEQ key value` and `EXISTS key:wait`
//!   in one write. Deleted and a waiter marked: answer `2` and send `PUBLISH key ""` after it.
//!   The `PUBLISH` runs after the delete instead of inside it; that is safe because a notification
//!   is advisory: it only cuts a waiter's pause short, and the waiter then competes with `SET NX`
//!   like anyone (a notification lost or late costs that waiter one pause; one early is
//!   impossible, as it follows the delete on the node). The `2` itself (a waiter elsewhere exists)
//!   is read at the same moment the script reads it, right after the delete.
//! - **Waiter mark** (`MARK_WAITING`): `SET key:wait 1 PX ms`, answering `OK` for the script's `1`.
//! - **Coalesced extend** (`EXTEND_MANY`): one `SET ... IFEQ ... GET` per lock, back to back,
//!   answered as the script's one character per lock.
//!
//! - **Cross-process hand-off** (`crate::protocol::handoff`), only where scripts are refused
//!   (a profile without scripting; a node that may run scripts runs the hand-off's own): the take-over is
//!   `SET key value NX PX ttl` then `ZADD key:wait NX since name` and `PEXPIRE key:wait ms` (no reservation
//!   is ever taken over there: none is written), read from the `SET` alone; the hand-off release is
//!   the release that wakes waiters above, and a lost take-over's step back is `DELIFEQ`. Such a
//!   node behaves as before the hand-off: free at the release, everyone woken (a named waiter also
//!   listens on the key's channel) — still mutual exclusion by `SET NX`.
//!
//! Measured on Valkey 9.1.2 (`results/2026-12-01/native/`): each native form costs the server less
//! than its script, and than the coalesced scripts per lock, so a server with these commands gets
//! no release coalescing and a renewal batch of native commands.

use std::sync::Arc;

use bytes::Bytes;

use super::cmd::{Cmd, Extend, NodeResult, Op, Reply, Script};
use super::handoff::{RELEASE_HANDOFF, RELEASE_TO, STEP_BACK, TAKE_OVER, UNMARK};
use super::scripts::{
    EXTEND, EXTEND_MANY, MARK_WAITING, RELEASE, RELEASE_MANY, RELEASE_MANY_ANY_SLOT,
    RELEASE_NOTIFY, RELEASE_NOTIFY_MANY, RELEASE_NOTIFY_MANY_ANY_SLOT,
};
use crate::algo::value::LockValue;
use crate::error::NodeError;

/// The plain lock's scripts, each of whose uses has a native form (the exclusive kind's script list
/// is this one, so a plain lock works for a lock user without scripting). The coalesced releases
/// count: a native connection never coalesces releases (`Profile::coalesces_releases`), it sends
/// each one's `DELIFEQ`.
pub(crate) static NATIVE_COVERED: [&Script; 14] = [
    &RELEASE,
    &RELEASE_NOTIFY,
    &MARK_WAITING,
    &EXTEND,
    &EXTEND_MANY,
    &RELEASE_MANY,
    &RELEASE_NOTIFY_MANY,
    &RELEASE_MANY_ANY_SLOT,
    &RELEASE_NOTIFY_MANY_ANY_SLOT,
    &TAKE_OVER,
    &RELEASE_HANDOFF,
    &UNMARK,
    &RELEASE_TO,
    &STEP_BACK,
];

/// Whether every use of `script` has a native form, so a kind listing only such scripts works on a
/// node whose user may not run scripts: every operation but a kind's own (the scripts of
/// [`NATIVE_COVERED`]).
pub(crate) fn covers(script: &Script) -> bool {
    script.op != Op::Own
}

/// One operation in its native form: the commands it sends (see [`Native::commands`]) and how their
/// replies read (see [`Native::answer`]).
#[derive(Debug, Clone)]
pub(crate) enum Native {
    /// `DELIFEQ key value` (and, with `notify`, `EXISTS key:wait`).
    Release {
        key: Bytes,
        value: LockValue,
        notify: bool,
    },
    /// `SET key value IFEQ value GET PX ttl_ms`.
    Extend(Extend),
    /// `SET key:wait 1 PX ttl_ms`.
    Mark { key: Bytes, ttl_ms: u64 },
    /// `ZREM key:wait name` (the hand-off's unmark).
    Unmark { key: Bytes, name: u64 },
    /// The take-over without scripts: `SET key value NX PX ttl_ms`, `ZADD key:wait NX since_us
    /// name`, `PEXPIRE key:wait mark_ms`.
    TakeOver {
        key: Bytes,
        value: LockValue,
        ttl_ms: u64,
        name: u64,
        mark_ms: u64,
        since_us: u64,
    },
    /// One [`Native::Extend`] per lock, answered as one string of `1`/`0`/`-`.
    ExtendMany(Arc<[Extend]>),
    /// After a release's `0`: `EXISTS key` tells gone (`0`) from someone else's (`-1`).
    Owner { key: Bytes },
    /// After a release that found a waiter: `PUBLISH key ""`. Its reply is not read.
    Publish { key: Bytes },
}

/// What a native form's replies mean.
#[derive(Debug)]
pub(crate) enum Answer {
    /// The script's answer.
    Done(NodeResult),
    /// Not known yet: send this and read its answer instead.
    Then(Native),
    /// The script's answer, and a command to send after it whose reply nobody reads.
    DoneThen(NodeResult, Native),
}

impl Native {
    /// `op`'s native form, if it has one (the shared single-key scripts; everything else, acquire
    /// included, is sent as it is).
    pub(crate) fn of(op: &Cmd) -> Option<Self> {
        match op {
            Cmd::Script {
                script,
                keys,
                value,
                args,
            } => {
                let key = keys.as_slice().first()?.clone();
                let value = *value;
                match script.op {
                    Op::Release | Op::ReleaseNotify => Some(Self::Release {
                        key,
                        value,
                        notify: script.op == Op::ReleaseNotify,
                    }),
                    Op::Extend => Some(Self::Extend(Extend {
                        key,
                        value,
                        ttl_ms: *args.as_slice().first()?,
                    })),
                    Op::Mark => Some(Self::Mark {
                        key,
                        ttl_ms: *args.as_slice().first()?,
                    }),
                    _ => None,
                }
            }
            Cmd::ExtendMany { script, locks } if script.op == Op::ExtendMany => {
                Some(Self::ExtendMany(locks.clone()))
            }
            _ => None,
        }
    }

    /// The native forms of the hand-off's scripts, for a node that may not run scripts.
    pub(crate) fn without_scripts(op: &Cmd) -> Option<Self> {
        let Cmd::Script {
            script,
            keys,
            value,
            args,
        } = op
        else {
            return None;
        };
        let key = keys.as_slice().first()?.clone();
        let value = *value;
        match (script.op, args.as_slice()) {
            (Op::ReleaseHandoff | Op::ReleaseTo, _) => Some(Self::Release {
                key,
                value,
                notify: true,
            }),
            // A lost take-over's own value, deleted: no reservation is ever taken over there.
            (Op::StepBack, _) => Some(Self::Release {
                key,
                value,
                notify: false,
            }),
            (Op::Unmark, &[name, _, _, _]) => Some(Self::Unmark { key, name }),
            (Op::TakeOver, &[ttl_ms, name, mark_ms, since_us, _]) => Some(Self::TakeOver {
                key,
                value,
                ttl_ms,
                name,
                mark_ms,
                since_us,
            }),
            _ => None,
        }
    }

    /// How many commands this form sends (one reply each).
    pub(crate) fn parts(&self) -> usize {
        match self {
            Self::Release { notify: true, .. } => 2,
            Self::TakeOver { .. } => 3,
            Self::ExtendMany(locks) => locks.len().max(1),
            _ => 1,
        }
    }

    /// Calls `each` with the arguments of every command this form sends, in order.
    pub(crate) fn commands(&self, mut each: impl FnMut(&[&[u8]])) {
        match self {
            Self::Release { key, value, notify } => {
                each(&[b"DELIFEQ", key, value.as_bytes()]);
                if *notify {
                    let mark = [&key[..], &b":wait"[..]].concat();
                    each(&[b"EXISTS", &mark]);
                }
            }
            Self::Extend(lock) => extend(lock, &mut each),
            Self::TakeOver {
                key,
                value,
                ttl_ms,
                name,
                mark_ms,
                since_us,
            } => {
                let ttl = ttl_ms.to_string();
                each(&[b"SET", key, value.as_bytes(), b"NX", b"PX", ttl.as_bytes()]);
                let mark = [&key[..], &b":wait"[..]].concat();
                let (since, name) = (since_us.to_string(), name.to_string());
                each(&[b"ZADD", &mark, b"NX", since.as_bytes(), name.as_bytes()]);
                each(&[b"PEXPIRE", &mark, mark_ms.to_string().as_bytes()]);
            }
            Self::Unmark { key, name } => {
                let mark = [&key[..], &b":wait"[..]].concat();
                each(&[b"ZREM", &mark, name.to_string().as_bytes()]);
            }
            Self::Mark { key, ttl_ms } => {
                let mark = [&key[..], &b":wait"[..]].concat();
                each(&[b"SET", &mark, b"1", b"PX", ttl_ms.to_string().as_bytes()]);
            }
            Self::ExtendMany(locks) => {
                if locks.is_empty() {
                    // Never built empty; were it, one harmless command keeps parts() == replies.
                    each(&[b"PING"]);
                }
                for lock in locks.iter() {
                    extend(lock, &mut each);
                }
            }
            Self::Owner { key } => each(&[b"EXISTS", key]),
            Self::Publish { key } => each(&[b"PUBLISH", key, b""]),
        }
    }

    /// Reads this form's replies (one per command, in order) as its script's answer.
    pub(crate) fn answer(&self, replies: &mut dyn Iterator<Item = NodeResult>) -> Answer {
        let mut next = || {
            replies
                .next()
                .unwrap_or_else(|| Err(NodeError::Protocol("native command: reply missing".into())))
        };
        match self {
            Self::Release { key, notify, .. } => {
                let deleted = next();
                let marked = if *notify { Some(next()) } else { None };
                match (deleted, marked) {
                    (Ok(Reply::Int(1)), Some(Ok(Reply::Int(1)))) => {
                        Answer::DoneThen(Ok(Reply::Int(2)), Self::Publish { key: key.clone() })
                    }
                    (Ok(Reply::Int(1)), _) => Answer::Done(Ok(Reply::Int(1))),
                    (Ok(Reply::Int(0)), _) => Answer::Then(Self::Owner { key: key.clone() }),
                    (Ok(other), _) => Answer::Done(Err(other.unexpected("DELIFEQ"))),
                    (Err(e), _) => Answer::Done(Err(e)),
                }
            }
            Self::Extend(lock) => Answer::Done(extended(lock, next()).map(Reply::Int)),
            Self::TakeOver { .. } => {
                // The mark's replies say nothing about the vote (a string mark refuses ZADD).
                let set = next();
                let _ = (next(), next());
                Answer::Done(match set {
                    Ok(Reply::Ok) => Ok(Reply::Int(1)),
                    Ok(Reply::Nil) => Ok(Reply::Int(-1)),
                    Ok(other) => Err(other.unexpected("SET NX PX (take-over)")),
                    Err(e) => Err(e),
                })
            }
            Self::Mark { .. } => Answer::Done(match next() {
                Ok(Reply::Ok) => Ok(Reply::Int(1)),
                Ok(other) => Err(other.unexpected("SET (waiter mark)")),
                Err(e) => Err(e),
            }),
            Self::ExtendMany(locks) => {
                let mut codes = Vec::with_capacity(locks.len());
                let mut failed = None;
                for lock in locks.iter() {
                    codes.push(match extended(lock, next()) {
                        Ok(1) => b'1',
                        Ok(0) => b'0',
                        Ok(_) => b'-',
                        // The script's `pcall` reads a key of another type as someone else's.
                        Err(NodeError::Server(msg)) if msg.contains("WRONGTYPE") => b'-',
                        Err(e) => {
                            failed.get_or_insert(e);
                            b'?'
                        }
                    });
                }
                // A whole-call failure is every lock's, as the script's error would have been.
                Answer::Done(match failed {
                    Some(e) => Err(e),
                    None => Ok(Reply::Data(codes.into())),
                })
            }
            Self::Owner { .. } => Answer::Done(match next() {
                Ok(Reply::Int(0)) => Ok(Reply::Int(0)),
                Ok(Reply::Int(1)) => Ok(Reply::Int(-1)),
                Ok(other) => Err(other.unexpected("EXISTS")),
                Err(e) => Err(e),
            }),
            Self::Publish { .. } => Answer::Done(next().map(|_| Reply::Int(0))),
            Self::Unmark { .. } => Answer::Done(next().map(|_| Reply::Int(1))),
        }
    }
}

fn extend(lock: &Extend, each: &mut impl FnMut(&[&[u8]])) {
    let value = lock.value.as_bytes();
    let ttl = lock.ttl_ms.to_string();
    each(&[
        b"SET",
        &lock.key,
        value,
        b"IFEQ",
        value,
        b"GET",
        b"PX",
        ttl.as_bytes(),
    ]);
}

/// A `SET ... IFEQ ... GET` reply as the extend script's `1`/`0`/`-1`.
fn extended(lock: &Extend, reply: NodeResult) -> Result<i64, NodeError> {
    match reply? {
        Reply::Data(old) if old[..] == *lock.value.as_bytes() => Ok(1),
        Reply::Data(_) => Ok(-1),
        Reply::Nil => Ok(0),
        other => Err(other.unexpected("SET IFEQ GET")),
    }
}

#[cfg(test)]
#[path = "native_tests.rs"]
mod tests;
