//! The engines loadgen compares, behind one small trait, [`LockClient`], so one worker loop drives them all.
//!
//! - [`redlock`]: this project's engine, on its own pipeline (`redlock`) or on fred (`redlock-fred`).
//! - [`rslock`]: the published `rslock` crate, the peer to beat.
//! - [`raw`]: the same Redis command stream without the lock algorithm: the overhead floor.
//! - [`cause`]: failure cause names (generic over the engine's error variants) for the counting maps.
//! - [`ceiling`]: not a lock client: redis-benchmark driving every node, the Redis-side ceiling.
//!
//! redlock is driven through its public `acquire`. rslock and raw run their retry loop here so attempts can
//! be counted; rslock's mirrors its library's loop exactly (see the file).

use std::future::Future;
use std::time::Duration;

use clap::ValueEnum;
use redlock_engine::Transport;

pub mod cause;
pub mod ceiling;
pub mod raw;
pub mod redlock;
pub mod rslock;

/// An engine name on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub enum EngineKind {
    /// redlock-engine on its own pipelined connections.
    Redlock,
    /// redlock-engine on the fred transport.
    RedlockFred,
    /// The `rslock` crate (redis-rs multiplexed connections).
    Rslock,
    /// SET NX PX to every node, then the compare-and-delete script to every node, no lock algorithm.
    Raw,
    /// redis-benchmark against every node at once, `-P 16`: the Redis-side ceiling (SET NX PX, then the
    /// release script; and `ceiling[native]`, DELIFEQ as the release, when every node accepts it).
    Ceiling,
}

impl EngineKind {
    /// Whether `--waiting` applies: this project's engine, whose waiting features it switches.
    pub fn has_waiting(self) -> bool {
        matches!(self, Self::Redlock | Self::RedlockFred)
    }

    /// The `--waiting` modes its runs go through: each of `asked` for this project's engine; one run,
    /// with none, for the others.
    pub fn waiting_modes(self, asked: &[Waiting]) -> Vec<Option<Waiting>> {
        if self.has_waiting() {
            asked.iter().copied().map(Some).collect()
        } else {
            vec![None]
        }
    }

    /// The transport of this project's engine (`None` for the others).
    pub fn transport(self) -> Option<Transport> {
        match self {
            Self::Redlock => Some(Transport::Pipeline),
            Self::RedlockFred => Some(Transport::Fred),
            Self::Rslock | Self::Raw | Self::Ceiling => None,
        }
    }

    /// Whether it takes every `--lock` kind (the fair lock, permits, slots): this project's engine. The
    /// others only have an exclusive lock.
    pub fn takes_lock_kinds(self) -> bool {
        matches!(self, Self::Redlock | Self::RedlockFred)
    }

    /// Whether it can only use standalone masters (`redis://` nodes). rslock (redis-rs), the raw
    /// engine's per-node commands and redis-benchmark each talk to one server per node; only the engine
    /// follows a Redis Cluster (its own connections, or fred) or a Sentinel (fred).
    pub fn standalone_only(self) -> bool {
        matches!(self, Self::Rslock | Self::Raw | Self::Ceiling)
    }

    /// The name used on the command line and in the reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Redlock => "redlock",
            Self::RedlockFred => "redlock-fred",
            Self::Rslock => "rslock",
            Self::Raw => "raw",
            Self::Ceiling => "ceiling",
        }
    }
}

/// How redlock waits under contention (`--waiting`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Waiting {
    /// The engine's defaults: in-process FIFO queue per resource (`local_queue`), release notifications
    /// across processes (`notify_releases`), bounded local hand-off (`max_local_handoffs`, default 8).
    Smart,
    /// Randomized retry backoff only: `local_queue` false, `notify_releases` false, `max_local_handoffs` 0.
    Plain,
}

impl Waiting {
    /// The name used on the command line and in the reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Smart => "smart",
            Self::Plain => "plain",
        }
    }
}

/// The outcome of one acquire call, with how many attempts it made.
#[derive(Debug)]
pub struct Acquired<H> {
    /// The held lock, or the cause of the last failed attempt (an error variant name).
    pub result: Result<H, &'static str>,
    /// Attempts made (1 = first try), when the engine tells.
    pub attempts: Option<u32>,
}

/// What the worker loop needs from an engine.
pub trait LockClient: Send + Sync + 'static {
    /// A held lock.
    type Held: Send + 'static;

    /// Acquires `resource` (the engine adds the `redlock:` key prefix, or the client does), retrying as
    /// configured.
    fn acquire(&self, resource: &[u8]) -> impl Future<Output = Acquired<Self::Held>> + Send;

    /// Releases a held lock; the error is a cause name.
    fn release(&self, held: Self::Held) -> impl Future<Output = Result<(), &'static str>> + Send;
}

/// The retry knobs every client gets, from the workload.
#[derive(Debug, Clone, Copy)]
pub struct RetrySpec {
    /// Attempts after the first.
    pub retries: u32,
    /// Base pause.
    pub delay: Duration,
    /// Uniform extra pause.
    pub jitter: Duration,
}

/// The key prefix every engine's keys carry, so all engines write keys of the same length.
pub const KEY_PREFIX: &[u8] = b"redlock:";

/// The key of `resource`: [`KEY_PREFIX`] and the resource, as every engine that builds its own keys
/// writes it.
pub fn lock_key(resource: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(KEY_PREFIX.len() + resource.len());
    key.extend_from_slice(KEY_PREFIX);
    key.extend_from_slice(resource);
    key
}
