//! The fields of a log line that are codes: how a call ended ([`Outcome`]), whether the counter was
//! written ([`Wrote`]), the fenced store's answer ([`Fenced`]), the lock's kind ([`LockKind`]), how the
//! grant came ([`Via`]) and what a read-write holder saw ([`Seen`]); each with its word in the log.

use redlock_engine::{LockError, NodeError};

/// How a lock operation ended, as logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Not attempted.
    None,
    /// Succeeded.
    Ok,
    /// `NotOwner`.
    NotOwner,
    /// `AlreadyExpired`.
    Expired,
    /// `Contended`.
    Contended,
    /// `QuorumNotReached`.
    Quorum,
    /// `QuorumNotReached` naming a node whose clock jumped forward (`NodeError::ClockJump`): the
    /// clock guard took that node's vote away (scenario 16).
    ClockJump,
    /// `ValidityExpired`.
    Validity,
    /// `Overloaded`: admission control gave the round no turn in time (the nodes were not asked).
    Overloaded,
    /// Any other error.
    Other,
}

impl Outcome {
    /// The outcome of a lock call.
    pub fn of<T>(result: &Result<T, LockError>) -> Self {
        match result {
            Ok(_) => Self::Ok,
            Err(LockError::NotOwner) => Self::NotOwner,
            Err(LockError::AlreadyExpired) => Self::Expired,
            Err(LockError::Contended { .. }) => Self::Contended,
            Err(LockError::QuorumNotReached { failures, .. })
                if failures
                    .iter()
                    .any(|(_, e)| matches!(e, NodeError::ClockJump)) =>
            {
                Self::ClockJump
            }
            Err(LockError::QuorumNotReached { .. }) => Self::Quorum,
            Err(LockError::ValidityExpired { .. }) => Self::Validity,
            Err(LockError::Overloaded { .. }) => Self::Overloaded,
            Err(_) => Self::Other,
        }
    }

    /// The word in the log.
    pub fn code(self) -> &'static str {
        match self {
            Self::None => "-",
            Self::Ok => "ok",
            Self::NotOwner => "not-owner",
            Self::Expired => "expired",
            Self::Contended => "contended",
            Self::Quorum => "quorum",
            Self::ClockJump => "clock-jump",
            Self::Validity => "validity",
            Self::Overloaded => "overloaded",
            Self::Other => "other",
        }
    }

    pub(super) fn parse(s: &str) -> Option<Self> {
        [
            Self::None,
            Self::Ok,
            Self::NotOwner,
            Self::Expired,
            Self::Contended,
            Self::Quorum,
            Self::ClockJump,
            Self::Validity,
            Self::Overloaded,
            Self::Other,
        ]
        .into_iter()
        .find(|o| o.code() == s)
    }
}

/// Whether the protected counter was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrote {
    /// Read-modify-write completed under a lock that was valid when the write was issued.
    Yes,
    /// The lock was no longer valid after the pause: the write was skipped.
    Skipped,
    /// This client protects no counter.
    NoCounter,
}

/// What the fenced store answered to a grant's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fenced {
    /// No fenced write (unfenced lock, or no storage).
    None,
    /// Accepted; the store's sequence number of the write (its apply order for the resource).
    Accepted(u64),
    /// Rejected: a higher token had already been accepted.
    Rejected,
}

impl Fenced {
    pub(super) fn code(self) -> String {
        match self {
            Self::None => "-".into(),
            Self::Accepted(seq) => seq.to_string(),
            Self::Rejected => "r".into(),
        }
    }

    pub(super) fn parse(s: &str) -> Option<Self> {
        match s {
            "-" => Some(Self::None),
            "r" => Some(Self::Rejected),
            n => n.parse().ok().map(Self::Accepted),
        }
    }
}

/// What kind of lock a grant is: the checker's overlap rule depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// `x`: exclusive, one resource (`try_acquire`, `try_acquire_fenced`, `acquire`, `acquire_fair`).
    Exclusive,
    /// `m`: exclusive on several resources at once (`acquire_many`).
    Many,
    /// `r`: a shared (reader) hold of a read-write lock.
    Read,
    /// `w`: the exclusive (writer) hold of a read-write lock.
    Write,
    /// `p<K>`: a permit of a counting semaphore of K permits (`acquire_permit`).
    Permit(u32),
    /// `s<K>`: a slot of a slot semaphore of K slots (`acquire_slot`); the grant's resource is the
    /// semaphore's, not the slot's.
    Slot(u32),
}

impl LockKind {
    /// Whether holds of this kind may overlap each other (never one of another kind). Semaphore holds
    /// share up to their K: the checker counts them instead (`crate::crowding`).
    pub fn shared(self) -> bool {
        self == Self::Read || self.limit().is_some()
    }

    /// A semaphore's K: how many holds of this kind may overlap.
    pub fn limit(self) -> Option<u32> {
        match self {
            Self::Permit(k) | Self::Slot(k) => Some(k),
            _ => None,
        }
    }

    /// The code in the log.
    pub fn code(self) -> String {
        match self {
            Self::Exclusive => "x".into(),
            Self::Many => "m".into(),
            Self::Read => "r".into(),
            Self::Write => "w".into(),
            Self::Permit(k) => format!("p{k}"),
            Self::Slot(k) => format!("s{k}"),
        }
    }

    pub(super) fn parse(s: &str) -> Option<Self> {
        let count = || s[1..].parse().ok().filter(|&k| k > 0);
        match s.as_bytes().first()? {
            b'p' => count().map(Self::Permit),
            b's' => count().map(Self::Slot),
            _ => [Self::Exclusive, Self::Many, Self::Read, Self::Write]
                .into_iter()
                .find(|k| k.code() == s),
        }
    }
}

/// How a grant reached its holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// From the nodes, after this many attempts (`Lock::attempts`).
    Nodes(u32),
    /// `h`: handed over by the previous local holder, without a round trip.
    Handoff,
    /// `he`: handed over, and extended on take-over (too little validity was left).
    HandoffExtended,
    /// `q<n>`: a fair lock after this many attempts of its own: from the nodes, or granted by the
    /// release round of this process's previous holder (`engine::successors`), whose validity counts
    /// from that round's start.
    Queue(u32),
}

impl Via {
    pub(super) fn code(self) -> String {
        match self {
            Self::Nodes(n) => n.to_string(),
            Self::Handoff => "h".into(),
            Self::HandoffExtended => "he".into(),
            Self::Queue(n) => format!("q{n}"),
        }
    }

    pub(super) fn parse(s: &str) -> Option<Self> {
        match s {
            "h" => Some(Self::Handoff),
            "he" => Some(Self::HandoffExtended),
            q if q.starts_with('q') => q[1..].parse().ok().map(Self::Queue),
            n => n.parse().ok().map(Self::Nodes),
        }
    }
}

/// What a read-write lock's holder saw of the counter and its mirror (a writer writes the counter,
/// then the mirror: in between, the pair is torn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// `-`: not a read-write lock.
    None,
    /// `ok`: counter and mirror equal, and (for a reader) unchanged across its critical section.
    Clean,
    /// `torn`: they differed, or changed under a reader's lock, while the lock was still valid.
    Torn,
    /// `late`: the lock was no longer valid after the reads, so they prove nothing.
    Late,
}

impl Seen {
    pub(super) fn code(self) -> &'static str {
        match self {
            Self::None => "-",
            Self::Clean => "ok",
            Self::Torn => "torn",
            Self::Late => "late",
        }
    }

    pub(super) fn parse(s: &str) -> Option<Self> {
        [Self::None, Self::Clean, Self::Torn, Self::Late]
            .into_iter()
            .find(|k| k.code() == s)
    }
}
