//! What the engine knows of a kind of lock: its [`Spec`] (data, never matched on), a lock's [`Kind`]
//! (a `Spec` and its one number), an acquire's [`Target`], the keys a kind adds ([`Suffix`]) and the
//! public name inspect reports ([`LockKind`]). Each kind's file (`crate::kinds`) defines its `Spec`;
//! the engine, the watchdog and [`Lock`] only ever ask the `Spec`, and the list of kinds reaches them
//! as a [`super::catalog::Catalog`].
//!
//! [`Lock`]: crate::Lock

use std::fmt;

use bytes::Bytes;

use super::cmd::{script_cmd, Args, Cmd, Keys, NodeResult, Script};
pub use super::inspect::LockKind;
use crate::algo::quorum::{Tally, Vote};
use crate::algo::value::LockValue;

/// What a kind of lock is, as the engine sees it.
#[derive(Debug)]
pub(crate) struct Spec {
    /// The kind's public name: what inspect reports ([`LockKind::name`]), the CLI prints, `Debug`
    /// shows.
    pub(crate) name: &'static str,
    /// The byte after the engine tag in every value this kind draws (see `crate::algo::value`), so
    /// inspect can tell which kind holds a key. Unique in the list of kinds (a test checks).
    pub(crate) code: u8,
    /// The command an attempt sends: `(keys, value, ttl_ms, arg)` (`arg`: see [`Kind`]).
    pub(crate) acquire: fn(&Keys, LockValue, u64, u64) -> Cmd,
    /// How an acquire reply votes. A "taken" vote must mean the acquire wrote nothing of ours on
    /// that node: a lost round is not released there (`crate::engine::attempt`).
    pub(crate) vote: fn(NodeResult) -> Vote,
    /// Yes votes an acquire or extend needs over `(nodes, arg)`: [`majority`] for every kind but the
    /// semaphore, whose holders need more nodes (see `kinds::semaphore`).
    pub(crate) quorum: fn(usize, u64) -> usize,
    /// The owner-checked release script.
    pub(crate) release: &'static Script,
    /// The release that also publishes it for waiters in other processes (or `release` again).
    pub(crate) release_notify: &'static Script,
    /// The owner-checked extend script (`ARGV[2]`: the new TTL in ms).
    pub(crate) extend: &'static Script,
    /// Whether the lock is still ours on a node, changing nothing (`crate::protocol::scripts::HOLDS`
    /// and its forms): where this kind keeps its holder's value.
    pub(crate) holds: &'static Script,
    /// Whose extend is `exclusive::EXTEND` on the first key alone, so the watchdog may coalesce it with
    /// others into one `exclusive::EXTEND_MANY` call per node.
    pub(crate) extends_first_key: bool,
    /// What a writer sends when it gives up, so its intent stops holding readers back: `(keys, arg)`.
    pub(crate) give_up: Option<fn(&Keys, u64) -> Cmd>,
    /// The resource's other keys, after its own: `prefix{resource}` + each suffix.
    pub(crate) suffixes: &'static [Suffix],
    /// Keys its scripts derive from the resource key instead of taking them as `KEYS` (the waiter
    /// mark): not part of an acquire's target, but inspect reads them and force-release knows them.
    pub(crate) marks: &'static [Suffix],
    /// This kind with a holder label (`Config::holder_label`), if it has such a form: what an
    /// acquire of this kind becomes on an engine with a label.
    pub(crate) labeled: Option<&'static Spec>,
    /// The acquire of a labeled form: `(keys, value, ttl_ms, label_ttl_ms, label)`, sent instead of
    /// `acquire` when the engine has a label (it carries the label, which `acquire` does not see).
    pub(crate) acquire_labeled: Option<LabeledAcquire>,
    /// Whether waiters queue in-process: exclusive holders do; readers share, and multi-resource locks
    /// span several queues.
    pub(crate) queues_locally: bool,
    /// Whether a release may hand the lock to a local waiter (not a fenced lock: its token belongs to
    /// one holder, and the next holder needs a larger one).
    pub(crate) hands_off: bool,
    /// The cross-process hand-off (`super::handoff`): how a waiter that lost to another process
    /// attempts, and how a release with such waiters reserves the key for the oldest. `None`: the
    /// waiter mark and the release that wakes everyone.
    pub(crate) handoff: Option<&'static super::handoff::Handoff>,
    /// A release that may grant the next holder in its own round (`crate::engine::successors`):
    /// the fair lock's. `None`: releases only free the key.
    pub(crate) successor: Option<&'static Successor>,
    /// Whether every key is a resource of its own (multi-resource locks).
    pub(crate) multi_resource: bool,
    /// Whether holders share the resource (readers).
    pub(crate) shared: bool,
    /// Every script this kind sends, for the handshake.
    pub(crate) scripts: &'static [&'static Script],
    /// What inspect reads of this kind's keys beyond the resource key (`super::inspect`), each part
    /// once however many kinds list it.
    pub(crate) inspect: &'static [&'static super::inspect::InspectPart],
}

/// A kind's release that lets the nodes grant a named waiter of the releasing engine in the same
/// round, where the kind's own rule makes it the next holder.
#[derive(Debug)]
pub(crate) struct Successor {
    /// The release: `(keys, holder's value, waiter's TTL ms, waiter's rank, waiter's value)`.
    pub(crate) release_to: fn(&Keys, LockValue, u64, u64, LockValue) -> Cmd,
    /// A reply as the release's vote, and whether the node set the key to the waiter's value.
    pub(crate) vote: fn(NodeResult, LockValue) -> (Vote, bool),
}

/// A labeled form's acquire: `(keys, value, ttl_ms, label_ttl_ms, label)`.
pub(crate) type LabeledAcquire = fn(&Keys, LockValue, u64, u64, &Bytes) -> Cmd;

/// A key a kind adds to a resource (`prefix{resource}` + `name`) and what a forced release does
/// with it.
#[derive(Debug)]
pub(crate) struct Suffix {
    pub(crate) name: &'static [u8],
    pub(crate) forced: Forced,
}

/// What [`crate::Redlock::force_release`] does with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Forced {
    /// Deleted, and counted in its answer (the resource key, a reader set, a write intent).
    Counted,
    /// Deleted, not counted (the holder label: it only describes the holder).
    Deleted,
    /// Kept: history the next holders rely on (a fence counter) or entries that expire on their
    /// own (a semaphore's permits).
    Kept,
    /// Kept, and when it exists the forced release wakes the waiters (the waiter mark): an empty
    /// message on the resource key's channel.
    Wakes,
    /// A queue of places, the holder's among them (the fair lock's): kept, and this Lua, run before
    /// the deletes, ends the holder's place in it and wakes the next (`v`: the value the resource
    /// key holds, `false` when it holds none). Else the next waiter would stay behind the broken
    /// holder's place until it expired, as long as the lock itself.
    Queue(&'static str),
}

impl LockKind {
    /// The kind `spec` draws values of (its name).
    pub(crate) fn of(spec: &Spec) -> Self {
        Self::named(spec.name)
    }
}

/// One lock's kind: its [`Spec`], and the one number some kinds carry (a reader limit, a writer's
/// ticket).
#[derive(Clone, Copy)]
pub(crate) struct Kind {
    spec: &'static Spec,
    arg: u64,
}

/// What one acquire is for: the kind of lock and its keys (prefix included).
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) kind: Kind,
    pub(crate) keys: Keys,
}

impl Kind {
    pub(crate) fn new(spec: &'static Spec, arg: u64) -> Self {
        Self { spec, arg }
    }

    pub(crate) fn spec(self) -> &'static Spec {
        self.spec
    }

    /// The same kind with another spec (its labeled form), `arg` kept.
    pub(crate) fn with_spec(self, spec: &'static Spec) -> Self {
        Self { spec, ..self }
    }

    /// Whether both are the same kind (whatever their `arg`).
    pub(crate) fn same_as(self, other: Kind) -> bool {
        std::ptr::eq(self.spec, other.spec)
    }

    pub(crate) fn acquire_cmd(self, keys: &Keys, value: LockValue, ttl_ms: u64) -> Cmd {
        (self.spec.acquire)(keys, value, ttl_ms, self.arg)
    }

    pub(crate) fn acquire_vote(self) -> fn(NodeResult) -> Vote {
        self.spec.vote
    }

    /// The votes a lock of this kind needs on `nodes` nodes (see `Spec::quorum`).
    pub(crate) fn quorum(self, nodes: usize) -> usize {
        (self.spec.quorum)(nodes, self.arg)
    }

    /// An empty tally for an acquire or extend round of this kind over `nodes` nodes.
    pub(crate) fn tally(self, nodes: usize) -> Tally {
        Tally::with_quorum(nodes, (self.spec.quorum)(nodes, self.arg))
    }

    /// The release command; `notify` also publishes the release for waiters in other processes.
    pub(crate) fn release_cmd(self, keys: &Keys, value: LockValue, notify: bool) -> Cmd {
        let script = if notify {
            self.spec.release_notify
        } else {
            self.spec.release
        };
        script_cmd(script, keys, value, Args::NONE)
    }

    /// The command that asks a node whether the lock is still ours (1, 0 gone, -1 another's).
    pub(crate) fn holds_cmd(self, keys: &Keys, value: LockValue) -> Cmd {
        script_cmd(self.spec.holds, keys, value, Args::NONE)
    }

    /// The extend command, to `ttl_ms` from when the node runs it.
    pub(crate) fn extend_cmd(self, keys: &Keys, value: LockValue, ttl_ms: u64) -> Cmd {
        script_cmd(self.spec.extend, keys, value, Args::of(&[ttl_ms]))
    }

    pub(crate) fn give_up_cmd(self, keys: &Keys) -> Option<Cmd> {
        self.spec.give_up.map(|cmd| cmd(keys, self.arg))
    }

    pub(crate) fn extends_first_key(self) -> bool {
        self.spec.extends_first_key
    }

    pub(crate) fn queues_locally(self) -> bool {
        self.spec.queues_locally
    }

    pub(crate) fn successor(self) -> Option<&'static Successor> {
        self.spec.successor
    }

    pub(crate) fn hands_off(self) -> bool {
        self.spec.hands_off
    }

    pub(crate) fn handoff(self) -> Option<&'static super::handoff::Handoff> {
        self.spec.handoff
    }

    pub(crate) fn multi_resource(self) -> bool {
        self.spec.multi_resource
    }

    pub(crate) fn shared(self) -> bool {
        self.spec.shared
    }
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spec.name)
    }
}

/// The quorum of every kind whose holders exclude each other: a majority of the nodes.
pub(crate) fn majority(nodes: usize, _: u64) -> usize {
    crate::algo::quorum::quorum(nodes)
}
