//! How the algorithm reaches a node: one small trait, [`NodeClient`], with two implementations.
//!
//! - [`pipeline`]: the engine's own connection (default). One TCP connection per node; every queued request
//!   is written with the others in one write, replies complete requests in FIFO order.
//! - `fred` (feature `fred`): the fred client, for comparison and for Cluster/Sentinel node sets (a
//!   node URL `redis-cluster://` or `redis-sentinel://` always uses it, whatever [`Transport`] says).
//!
//! The contract both keep, because the lock's safety depends on it:
//! - [`NodeClient::send`] queues the command **now**; the returned [`Pending`] only waits for the reply.
//!   Release-after-failure relies on this: it fires the release and does not wait.
//! - A command is never replayed after a reconnect: in-flight commands fail with
//!   [`NodeError::ConnectionLost`] (or the protocol error that closed the connection) and the quorum
//!   logic decides.
//! - A reply of the wrong type for its command is that node's failure, never a vote ([`Reply::kind`]
//!   names the type in the error; the pipeline's input is bounded by `bounded`).
//! - `NOSCRIPT` is handled inside: `EVALSHA` first, `EVAL` once on `NOSCRIPT` (the script did not run, so
//!   sending it again is not a replay).

use std::sync::Arc;

use bytes::Bytes;

use crate::algo::clock::JumpLog;
use crate::algo::value::LockValue;
use crate::error::NodeError;

pub(crate) mod bounded;
pub(crate) mod connect;
#[cfg(feature = "fred")]
pub(crate) mod fred;
mod pending;
pub(crate) mod pipeline;
mod resp;
pub(crate) mod subscriber;
pub(crate) use pending::Pending;
#[cfg(test)]
pub(crate) mod test_scripts;

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
    /// by the transport only, never by the algorithm.
    ReleaseMany {
        script: &'static Script,
        locks: std::sync::Arc<[(Bytes, LockValue)]>,
    },
    /// `EVALSHA sha numkeys keys... args...` with byte arguments: the operator's scripts (inspect,
    /// forced release) and the labeled acquire, off the hot path.
    Eval {
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
            Self::Script { script, .. } | Self::Eval { script, .. } => !script.resend,
            _ => false,
        }
    }

    /// The script this command runs, if it is a script call (resent as `EVAL` on `NOSCRIPT`).
    pub(crate) fn script(&self) -> Option<&'static Script> {
        match self {
            Self::Script { script, .. } => Some(script),
            Self::ExtendMany { script, .. } => Some(script),
            Self::ReleaseMany { script, .. } => Some(script),
            Self::Eval { script, .. } => Some(script),
            _ => None,
        }
    }
}

/// A Lua script sent with `EVALSHA`, falling back to `EVAL` when a node answers `NOSCRIPT`. Each lock
/// kind defines its own (see `crate::kinds`); every connection's handshake loads the list it is given
/// in [`ConnectOptions::scripts`].
#[derive(Debug)]
pub(crate) struct Script {
    pub(crate) source: &'static str,
    pub(crate) sha1: &'static str,
    /// Whether a `NOSCRIPT` answer may be followed by `EVAL` of the source. The resend joins the back
    /// of the connection's queue, behind commands sent later; that is harmless for owner-checked
    /// release/extend/marker scripts, but an acquire resent behind its own release would set keys
    /// nobody releases. Those fail the node's vote instead, and the connection reloads the script.
    pub(crate) resend: bool,
}

/// A single-lock script the pipelined transport may coalesce, and its many-lock form: one call over
/// several keys that answers one character per lock, exactly what the single calls would answer in
/// the same order (the lock kinds say which: `crate::kinds::exclusive::COALESCED`).
#[derive(Debug)]
pub(crate) struct Coalesced {
    pub(crate) one: &'static Script,
    pub(crate) many: &'static Script,
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

/// Numeric script arguments after the lock value (at most 3), kept inline.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Args {
    len: u8,
    values: [u64; 3],
}

impl Args {
    /// No arguments after the value.
    pub(crate) const NONE: Self = Self {
        len: 0,
        values: [0; 3],
    };

    /// The given arguments (at most 3; more is a programming error caught in debug builds).
    pub(crate) fn of(values: &[u64]) -> Self {
        debug_assert!(values.len() <= 3);
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

/// A node's reply, reduced to what the algorithm looks at. Server errors arrive as [`NodeError::Server`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `+OK`
    Ok,
    /// A nil reply (`SET NX` on an existing key).
    Nil,
    /// An integer reply (the scripts' `1`/`0`/`-1`).
    Int(i64),
    /// A bulk string (fred: also a simple string, which its RESP2 values cannot tell apart).
    Data(Bytes),
    /// A `TIME` reply (two bulk strings of digits: seconds, microseconds), as microseconds since the
    /// Unix epoch (pipeline transport).
    Time(i64),
    /// A simple string other than `OK` (pipeline transport). No command the engine sends answers one.
    Status(Bytes),
    /// Anything else (arrays); the algorithm never expects one.
    Other,
}

impl Reply {
    /// The reply's RESP type, for errors: never its content, which could be a lock value or megabytes.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Ok => "status OK",
            Self::Nil => "nil",
            Self::Int(_) => "integer",
            Self::Data(_) => "bulk string",
            Self::Status(_) => "status string",
            Self::Time(_) => "TIME array",
            Self::Other => "array",
        }
    }

    /// The node error for a reply of the wrong type: names the command and the type received.
    pub(crate) fn unexpected(&self, command: &str) -> NodeError {
        NodeError::Protocol(format!("{command}: unexpected reply type {}", self.kind()))
    }
}

/// The result of one command on one node.
pub(crate) type NodeResult = Result<Reply, NodeError>;

/// One node's connection, whatever carries it.
pub(crate) trait NodeClient: Send + Sync + std::fmt::Debug {
    /// Queues `cmd` on this node's connection now and returns a future of its reply.
    ///
    /// The future has no deadline of its own: the caller bounds all nodes of a round with one timer.
    /// Dropping it discards the reply; the command still runs.
    fn send(&self, cmd: &Cmd) -> Pending;

    /// [`send`](Self::send) with the command already RESP-encoded by the caller, so a round encodes
    /// once, not once per node. Transports that do not write RESP themselves ignore `encoded`.
    fn send_encoded(&self, cmd: &Cmd, encoded: &[u8]) -> Pending {
        let _ = encoded;
        self.send(cmd)
    }

    /// Whether the node's connection is up right now.
    fn is_connected(&self) -> bool;

    /// Why this node can never be served as configured (an address this transport cannot use), if
    /// so. Not a connect failure: those are retried in the background.
    fn setup_error(&self) -> Option<NodeError> {
        None
    }

    /// Whether the node's answers count toward quorums now (false while it is quarantined).
    fn votes(&self) -> bool;

    /// Whether the clock guard has silenced this node (its wall clock jumped forward). Cheap: the
    /// fan-out asks it for every reply.
    fn clock_jumped(&self) -> bool {
        false
    }

    /// From now on, writes this node's forward clock jumps into `log` as node `index` (transports
    /// with the clock guard), so locks that counted its vote can tell.
    fn report_jumps(&self, _log: Arc<JumpLog>, _index: usize) {}

    /// The server's `run_id`, when known (read with quarantine on).
    fn run_id(&self) -> Option<String>;

    /// Requests queued or in flight on this node's connection (0 for transports that do not say).
    fn backlog(&self) -> usize {
        0
    }

    /// When this node's connection last delivered a reply (to anyone); `None` if unknown. A round
    /// keeps waiting past its node deadline for a node that answered since the round began.
    fn last_reply(&self) -> Option<tokio::time::Instant> {
        None
    }

    /// Whether this node takes multi-key scripts over unrelated keys ([`Cmd::ExtendMany`]): a
    /// standalone node does; a Cluster node set would answer `CROSSSLOT`.
    fn batches(&self) -> bool {
        false
    }

    /// This node's round-trip estimate; `None` for transports that do not measure it. The default
    /// node deadline follows its bound.
    fn rtt(&self) -> Option<&crate::algo::rtt::RttEstimate> {
        None
    }

    /// What the connection knows of its node, read-only, for operators (`Redlock::nodes_status`).
    fn status(&self) -> LinkStatus {
        LinkStatus {
            connected: self.is_connected(),
            ..LinkStatus::default()
        }
    }
}

/// One node's connection state as [`NodeClient::status`] reports it.
#[derive(Debug, Clone, Default)]
pub(crate) struct LinkStatus {
    pub(crate) connected: bool,
    pub(crate) quarantine: Option<crate::algo::quarantine::QuarantineView>,
    /// The clock guard silences the node until then.
    pub(crate) silenced_until: Option<tokio::time::Instant>,
    /// Why the last connect failed, or the protocol error that closed the connection.
    pub(crate) last_error: Option<NodeError>,
}

/// Encodes `cmd` once, for every node of a round.
pub(crate) fn encode(out: &mut bytes::BytesMut, cmd: &Cmd) {
    resp::encode_cmd(out, cmd, false);
}

/// Which implementation carries the node connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Transport {
    /// The engine's own pipelined connection per node (the fast path). Default.
    #[default]
    Pipeline,
    /// The fred client (feature `fred`) for every node: for comparison. Cluster and Sentinel nodes
    /// use fred under either setting.
    #[cfg(feature = "fred")]
    Fred,
}

/// Connection settings both transports honour.
#[derive(Debug, Clone)]
pub(crate) struct ConnectOptions {
    /// Bound on one connect + handshake; `build()` waits at most this long for the first connect.
    pub(crate) connect_timeout: std::time::Duration,
    /// Requests queued or in flight per node before [`NodeError::Backpressure`].
    pub(crate) max_pending: usize,
    /// First reconnect delay; doubles (with jitter) up to `reconnect_max`.
    pub(crate) reconnect_min: std::time::Duration,
    pub(crate) reconnect_max: std::time::Duration,
    /// Crashed-node quarantine: `Some(max lock lifetime)` when on.
    pub(crate) quarantine: Option<std::time::Duration>,
    /// The clock-jump guard (engine's own connections): `Some` when on.
    pub(crate) clock_guard: Option<crate::algo::clock::GuardSettings>,
    /// TLS client settings, present when some node is `rediss://`.
    pub(crate) tls: Option<connect::TlsSettings>,
    /// How much one node may make a connection buffer (the engine's own connections; see `bounded`).
    pub(crate) limits: bounded::Limits,
    /// The scripts every handshake loads (every lock kind's, see `crate::kinds::scripts`).
    pub(crate) scripts: &'static [&'static Script],
    /// The scripts whose calls may be coalesced when queued back to back (pipelined transport).
    pub(crate) coalesce: &'static [Coalesced],
}

/// Opens a node client of the chosen kind. Never fails for an unreachable node: it starts disconnected and
/// reconnects in the background; waits at most `connect_timeout` for the first connect.
pub(crate) async fn connect(
    kind: Transport,
    addr: crate::addr::NodeAddr,
    opts: &ConnectOptions,
) -> std::sync::Arc<dyn NodeClient> {
    // A cluster or Sentinel node set needs a client that follows the topology: fred's.
    #[cfg(feature = "fred")]
    if !addr.topology.is_standalone() {
        return std::sync::Arc::new(fred::FredNode::connect(addr, opts).await);
    }
    match kind {
        Transport::Pipeline => {
            std::sync::Arc::new(pipeline::PipelineNode::connect(addr, opts).await)
        }
        #[cfg(feature = "fred")]
        Transport::Fred => std::sync::Arc::new(fred::FredNode::connect(addr, opts).await),
    }
}
