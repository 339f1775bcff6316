//! The errors callers match on: [`LockError`] for lock operations, [`NodeError`] for one node's failure.

use std::fmt;
use std::time::Duration;

/// Why a lock operation did not succeed.
///
/// Sort it with [`class`](Self::class) without matching every variant: [`ErrorClass::Busy`]
/// (another owner holds it: wait and retry), [`ErrorClass::Unavailable`] (nodes down, slow,
/// quarantined, or this process overloaded: back off), [`ErrorClass::Lost`] (the lock is gone or
/// someone else's: stop using it), [`ErrorClass::Invalid`] (fix the call or the configuration).
/// [`is_retryable`](Self::is_retryable) is exactly "busy or unavailable".
#[derive(Debug)]
#[non_exhaustive]
pub enum LockError {
    /// Another owner holds the resource on enough nodes that a majority cannot be won.
    Contended {
        /// Nodes that answered "taken" (0 when `local`).
        taken: usize,
        /// Nodes in the set.
        nodes: usize,
        /// Held by another task of this process: the attempt did not reach the nodes.
        local: bool,
        /// How long until the holder's keys have expired on enough nodes for a majority, as the
        /// nodes said when the call gave up: the longest the wait can be unless the holder extends
        /// or renews (a release ends it sooner). `None` when not read (a local holder, too few
        /// answers, a key without expiry). See [`retry_after`](LockError::retry_after).
        retry_after: Option<Duration>,
        /// The holder's label (`Config::holder_label`), when it has one and the nodes said it.
        holder: Option<String>,
    },
    /// Too many nodes failed (errors, timeouts, disconnects) for a majority to be decided in our favour.
    QuorumNotReached {
        /// Nodes that confirmed.
        ok: usize,
        /// Confirmations a majority needs (`N/2 + 1`).
        needed: usize,
        /// Each failed node's index (in configuration order) and cause.
        failures: Vec<(usize, NodeError)>,
    },
    /// A majority was won, but so late that the remaining validity was below the configured minimum.
    /// The keys were released again.
    ValidityExpired {
        /// Validity that was left (zero if the attempt took longer than the TTL).
        left: Duration,
        /// The configured minimum.
        min: Duration,
    },
    /// The resource is held by another owner (release/extend found someone else's value).
    NotOwner,
    /// The lock had already expired: its keys were gone or its validity had ended.
    AlreadyExpired,
    /// A fenced acquire won the lock but no fencing-token commit won a majority within its validity
    /// (the lock was released again).
    FenceNotCommitted {
        /// Commit rounds tried.
        rounds: u32,
    },
    /// A semaphore's callers disagree on its size: a node holds the resource as a semaphore of `found`
    /// permits while live permits remain, and this call asked for `permits`. Nothing was granted. Not
    /// retryable: every caller of one resource must use the same count (it is forgotten once the last
    /// permit is released or expires).
    PermitsMismatch {
        /// The permit count this call asked for.
        permits: u32,
        /// The permit count a node holds the resource with.
        found: u64,
    },
    /// The lock was lost while its holder worked (a renewal did not win a majority, or its validity
    /// ended): the work may have run partly without it.
    Lost,
    /// A node could not be set up: its transport cannot serve the address as configured (for example
    /// a database index above 255 on a node carried by fred). Returned by [`crate::Redlock::new`];
    /// carries the node's index. An unreachable node is not this: it starts disconnected and reconnects.
    Node {
        /// Index of the node in configuration order.
        index: usize,
        /// What went wrong.
        source: NodeError,
    },
    /// Past capacity: this engine's own queue (admission control, see `Config::max_in_flight`) did
    /// not let the round start within its time budget, so the nodes were **not** asked. Nothing is
    /// wrong with the nodes or the resource; retry later, or give the call a longer budget
    /// (`acquire_timeout`).
    Overloaded {
        /// How long the round waited for its turn.
        waited: Duration,
    },
    /// The overall acquire deadline passed before a lock was won (the call's wait, or
    /// `acquire_timeout`). Sorts as its last attempt's error did ([`class`](Self::class)).
    Timeout {
        /// Attempts made before the deadline.
        attempts: u32,
        /// Why the last attempt failed (`None`: the call ran out of time before it could try, waiting
        /// for its own process's other tasks).
        last: Option<Box<LockError>>,
    },
    /// The operating system's random source failed to produce a lock value.
    Random(String),
    /// The configuration is unusable.
    InvalidConfig(String),
    /// An argument of this call is unusable (empty resource, TTL zero or too large, …).
    InvalidInput(String),
    /// The engine was shut down ([`crate::Redlock::shutdown`]): it takes no more locks.
    Closed,
}

/// What a caller does next about a [`LockError`]: [`LockError::class`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// Another owner holds the resource: wait and retry (a longer [`crate::Wait`]).
    Busy,
    /// The nodes could not decide in time: down, slow, quarantined, or this process past its own
    /// capacity. Back off and retry.
    Unavailable,
    /// The lock is gone or someone else's: stop the work it protects.
    Lost,
    /// The call or the configuration is wrong: retrying does not help.
    Invalid,
}

impl LockError {
    /// What a caller does next (see [`ErrorClass`]).
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Contended { .. } => ErrorClass::Busy,
            Self::QuorumNotReached { .. }
            | Self::ValidityExpired { .. }
            | Self::FenceNotCommitted { .. }
            | Self::Overloaded { .. }
            | Self::Random(_) => ErrorClass::Unavailable,
            // Out of time waiting behind this process's own tasks (no attempt lost): busy.
            Self::Timeout { last: None, .. } => ErrorClass::Busy,
            Self::Timeout {
                last: Some(last), ..
            } => last.class(),
            Self::NotOwner | Self::AlreadyExpired | Self::Lost => ErrorClass::Lost,
            Self::PermitsMismatch { .. }
            | Self::Node { .. }
            | Self::InvalidConfig(_)
            | Self::InvalidInput(_)
            | Self::Closed => ErrorClass::Invalid,
        }
    }

    /// Whether another attempt later may succeed: [`ErrorClass::Busy`] or
    /// [`ErrorClass::Unavailable`].
    pub fn is_retryable(&self) -> bool {
        matches!(self.class(), ErrorClass::Busy | ErrorClass::Unavailable)
    }

    /// For a lock held by another owner (also as a timeout's last error): how long until its keys
    /// expire on enough nodes for a majority, read from the nodes when the call gave up — the
    /// longest a new attempt needs to wait unless the holder extends or renews. An HTTP service's
    /// `Retry-After`. `None` when it is not known (see [`LockError::Contended`]).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Contended { retry_after, .. } => *retry_after,
            Self::Timeout {
                last: Some(last), ..
            } => last.retry_after(),
            _ => None,
        }
    }

    /// For a lock held by another owner (also as a timeout's last error): the holder's label
    /// (`Config::holder_label`), when it set one.
    pub fn holder(&self) -> Option<&str> {
        match self {
            Self::Contended { holder, .. } => holder.as_deref(),
            Self::Timeout {
                last: Some(last), ..
            } => last.holder(),
            _ => None,
        }
    }

    /// Another owner holds it ([`ErrorClass::Busy`]).
    pub fn is_busy(&self) -> bool {
        self.class() == ErrorClass::Busy
    }

    /// The nodes could not decide ([`ErrorClass::Unavailable`]).
    pub fn is_unavailable(&self) -> bool {
        self.class() == ErrorClass::Unavailable
    }
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Contended { local: true, .. } => {
                f.write_str("lock contended: held by another task of this process")
            }
            Self::Contended {
                taken,
                nodes,
                retry_after,
                holder,
                ..
            } => {
                write!(f, "lock contended: held by another owner")?;
                if let Some(holder) = holder {
                    write!(f, " ({holder:?})")?;
                }
                write!(f, " on {taken} of {nodes} nodes")?;
                match retry_after {
                    Some(d) => write!(f, "; free in at most {} ms", d.as_millis()),
                    None => Ok(()),
                }
            }
            Self::QuorumNotReached {
                ok,
                needed,
                failures,
            } => {
                write!(
                    f,
                    "quorum not reached: {ok} of {needed} needed confirmations"
                )?;
                for (index, cause) in failures {
                    write!(f, "; node {index}: {cause}")?;
                }
                Ok(())
            }
            Self::ValidityExpired { left, min } => write!(
                f,
                "validity expired during acquire: {left:?} left, minimum is {min:?}"
            ),
            Self::NotOwner => f.write_str("not the owner: the resource is held by another owner"),
            Self::AlreadyExpired => f.write_str("the lock had already expired"),
            Self::Lost => f.write_str("the lock was lost while held"),
            Self::PermitsMismatch { permits, found } => write!(
                f,
                "semaphore size mismatch: asked for {permits} permits, a node holds the resource \
                 with {found}"
            ),
            Self::FenceNotCommitted { rounds } => {
                write!(
                    f,
                    "no fencing token committed on a majority in {rounds} rounds"
                )
            }
            Self::Node { index, source } => write!(f, "node {index}: {source}"),
            Self::Overloaded { waited } => write!(
                f,
                "overloaded: waited {waited:?} in this process's queue for a turn on the nodes \
                 (the nodes were not asked)"
            ),
            Self::Timeout { attempts, last } => {
                write!(f, "acquire deadline passed after {attempts} attempts")?;
                match last {
                    Some(last) => write!(f, "; the last: {last}"),
                    None => f.write_str(" (waiting behind this process's own tasks)"),
                }
            }
            Self::Random(why) => write!(f, "OS random source failed: {why}"),
            Self::InvalidConfig(why) => write!(f, "invalid configuration: {why}"),
            Self::InvalidInput(why) => write!(f, "invalid input: {why}"),
            Self::Closed => f.write_str("the engine was shut down: it takes no more locks"),
        }
    }
}

impl std::error::Error for LockError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Node { source, .. } => Some(source),
            Self::Timeout {
                last: Some(last), ..
            } => Some(last.as_ref()),
            _ => None,
        }
    }
}

/// Why one node did not answer a command usefully.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeError {
    /// No reply before the per-node deadline.
    Timeout,
    /// The node is not connected right now (a reconnect runs in the background).
    Disconnected,
    /// The connection dropped while the command was in flight. It is never replayed: it may or may
    /// not have run, so the quorum logic treats it as a failure and release covers it.
    ConnectionLost,
    /// The node's request queue is full; the command was not sent.
    Backpressure,
    /// The server answered with an error (`WRONGTYPE`, `NOPERM`, …).
    Server(String),
    /// The reply did not have the expected shape.
    Protocol(String),
    /// Connecting or the connection handshake failed.
    Connect(String),
    /// The node restarted recently (or its `run_id` changed): its answers do not vote until it has
    /// been up for the maximum lock lifetime.
    Quarantined,
    /// The node's wall clock jumped forward (the clock guard saw its `TIME` outrun this process's
    /// monotonic clock): it may have expired keys early, so its answers do not vote for the maximum
    /// lock lifetime.
    ClockJump,
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout => f.write_str("timed out"),
            Self::Disconnected => f.write_str("not connected"),
            Self::ConnectionLost => f.write_str("connection lost with the command in flight"),
            Self::Backpressure => f.write_str("request queue full"),
            Self::Server(msg) => write!(f, "server error: {msg}"),
            Self::Protocol(msg) => write!(f, "protocol error: {msg}"),
            Self::Connect(msg) => write!(f, "connect failed: {msg}"),
            Self::Quarantined => f.write_str(
                "not voting yet: up less than max_ttl, or restarted (it may have lost the keys it \
                 granted); it votes once up for max_ttl — for a node you just started on purpose, \
                 wait, lower max_ttl, or build with quarantine(false) if its restarts keep its data",
            ),
            Self::ClockJump => f.write_str("its wall clock jumped forward: not voting for max_ttl"),
        }
    }
}

impl std::error::Error for NodeError {}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
