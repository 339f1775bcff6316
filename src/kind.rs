//! Lock kinds: what an acquire sends, and which scripts release and extend it.
//!
//! The exclusive single-resource lock is the hot path: a plain `SET NX PX`, no script. Multi-resource and
//! read-write locks acquire with a script, so a node grants all of it or none atomically.

use crate::quorum::Vote;
use crate::scripts::{
    Script, ACQUIRE_FENCED, ACQUIRE_MULTI, ACQUIRE_READ, ACQUIRE_WRITE, CANCEL_INTENT, EXTEND,
    EXTEND_MULTI, EXTEND_READ, RELEASE, RELEASE_MULTI, RELEASE_NOTIFY, RELEASE_READ,
};
use crate::transport::{Args, Cmd, Keys, NodeResult};
use crate::value::LockValue;

/// What a lock is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// One resource, one owner.
    Exclusive,
    /// Several resources, one owner, all or none on each node.
    Multi,
    /// A shared (reader) hold of a read-write lock, granted while fewer than `max_readers` hold it.
    Read { max_readers: u64 },
    /// An exclusive lock whose acquire also reads the resource's fence counter on every node, for a
    /// fencing token committed afterwards (see `fence`).
    Fenced,
    /// The exclusive (writer) hold of a read-write lock; `ticket` identifies this acquire across its
    /// attempts, so its intent to write survives retries.
    Write { ticket: u64 },
}

impl Kind {
    pub(crate) fn acquire_cmd(self, keys: &Keys, value: LockValue, ttl_ms: u64) -> Cmd {
        let script = |script: &'static Script, args: Args| Cmd::Script {
            script,
            keys: keys.clone(),
            value,
            args,
        };
        match self {
            Self::Exclusive => Cmd::SetNxPx {
                key: keys.as_slice()[0].clone(),
                value,
                ttl_ms,
            },
            Self::Multi => script(&ACQUIRE_MULTI, Args::of(&[ttl_ms])),
            Self::Fenced => script(&ACQUIRE_FENCED, Args::of(&[ttl_ms])),
            Self::Read { max_readers } => script(&ACQUIRE_READ, Args::of(&[ttl_ms, max_readers])),
            Self::Write { ticket } => script(&ACQUIRE_WRITE, Args::of(&[ttl_ms, ticket])),
        }
    }

    pub(crate) fn acquire_vote(self) -> fn(NodeResult) -> Vote {
        match self {
            Self::Exclusive => Vote::of_set,
            Self::Fenced => Vote::of_fenced_set,
            _ => Vote::of_script,
        }
    }

    /// The release script; `notify` also publishes the release for waiters in other processes.
    pub(crate) fn release_script(self, notify: bool) -> &'static Script {
        match self {
            Self::Exclusive | Self::Fenced | Self::Write { .. } if notify => &RELEASE_NOTIFY,
            Self::Exclusive | Self::Fenced | Self::Write { .. } => &RELEASE,
            Self::Multi => &RELEASE_MULTI,
            Self::Read { .. } => &RELEASE_READ,
        }
    }

    /// Whether this kind's extend is [`EXTEND`] on its first key alone, so the watchdog may coalesce
    /// it with others into one [`crate::scripts::EXTEND_MANY`] call per node.
    pub(crate) fn extends_first_key(self) -> bool {
        matches!(self, Self::Exclusive | Self::Fenced | Self::Write { .. })
    }

    pub(crate) fn extend_script(self) -> &'static Script {
        match self {
            Self::Exclusive | Self::Fenced | Self::Write { .. } => &EXTEND,
            Self::Multi => &EXTEND_MULTI,
            Self::Read { .. } => &EXTEND_READ,
        }
    }

    /// Whether waiters of this kind queue in-process: exclusive holders do; readers share, and
    /// multi-resource locks span several queues.
    pub(crate) fn queues_locally(self) -> bool {
        matches!(self, Self::Exclusive | Self::Fenced | Self::Write { .. })
    }

    /// Whether a release may hand this lock to a local waiter. Not a fenced lock: its token belongs to
    /// one holder, and the next holder needs a larger one.
    pub(crate) fn hands_off(self) -> bool {
        matches!(self, Self::Exclusive | Self::Write { .. })
    }

    /// The command a writer sends when it gives up, so its intent stops holding readers back.
    pub(crate) fn give_up_cmd(self, keys: &Keys, value: LockValue) -> Option<Cmd> {
        match self {
            Self::Write { ticket } => Some(Cmd::Script {
                script: &CANCEL_INTENT,
                keys: keys.clone(),
                value,
                args: Args::of(&[ticket]),
            }),
            _ => None,
        }
    }
}
