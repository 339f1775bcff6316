//! [`Config`]: every knob with its default (`settings` checks them into what the engine runs on).

use std::time::Duration;

use crate::algo::keys::KeyFormat;
use crate::transport::Transport;

/// Most nodes a lock may span. Redlock is meant for a handful of independent masters; 9 keeps the
/// per-round state on the stack.
pub const MAX_NODES: usize = 9;

/// Lock engine configuration. Build one with `..Default::default()` or through [`crate::Builder`]
/// (which can also start from one: `Builder::from(config)`).
///
/// `Debug` shows every node URL with its passwords replaced by `***` (services log their
/// configuration at start-up); serialising it (feature `serde`) keeps [`Config::nodes`] as given,
/// since a configuration file needs them.
#[derive(Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct Config {
    /// Node URLs, one per independent vote (1..=9): `redis://[user:password@]host:port[/db]` for a
    /// standalone master (`rediss://` for TLS), `redis-cluster://host:port[?node=host:port...]` for a
    /// Redis Cluster, `redis-sentinel://host:port[/db]?sentinelServiceName=name[&node=host:port...]`
    /// for a Sentinel-managed master (both need the `fred` feature; see `docs/guide.md`, "Node sets",
    /// on when they are safe). Default: empty (must be set).
    ///
    /// The one field that may hold secrets: `Debug` (of this `Config`, of a [`crate::Builder`], of the
    /// engine) shows these URLs with every password as `***`; with the `serde` feature they are
    /// serialised as given, passwords included, so a configuration written to a file can be read
    /// back.
    pub nodes: Vec<String>,
    /// Which connection carries the commands. Default: [`Transport::Pipeline`].
    pub transport: Transport,
    /// Prefix of every key the engine writes. The key of a resource is `prefix + "{" + resource + "}"`,
    /// or `prefix + resource` when the resource already has a hash tag (`{...}`), so a lock's keys
    /// (its value, waiter mark, fence counter, reader set) share one Cluster hash slot.
    /// Default: `"redlock:"`.
    #[cfg_attr(feature = "serde", serde(with = "crate::units::text"))]
    pub key_prefix: Vec<u8>,
    /// How a resource name becomes its key: [`KeyFormat::Tagged`] (`prefix{resource}`, above) or
    /// [`KeyFormat::Plain`] (`prefix + resource`: the key other Redlock clients such as `rslock`,
    /// redsync and node-redlock use, with an empty prefix). Default: [`KeyFormat::Tagged`].
    pub key_format: KeyFormat,
    /// Clock drift allowance as a fraction of the TTL; the engine also adds 2 ms for timer granularity.
    /// Must be in `[0, 1)`. Default: `0.01`.
    pub drift_factor: f64,
    /// Deadline for one node's reply within a round. `None`: fitted to the network — the larger of
    /// TTL x 0.05 (capped to 50 ms) and the slowest voting node's measured round-trip bound (smoothed
    /// RTT + 4 x its variation, as TCP computes its retransmission timeout), but never more than the TTL
    /// allows (the lock must still leave `min_validity_factor` of it). An explicit value is used as it
    /// is. Must be below the TTL. Default: `None`.
    #[cfg_attr(feature = "serde", serde(with = "crate::units::maybe_duration"))]
    pub node_timeout: Option<Duration>,
    /// A lock is granted only if at least this fraction of the TTL is left as validity (a lock with 2 ms
    /// left is a trap). Must be in `[0, 1)`. Default: `0.1`.
    pub min_validity_factor: f64,
    /// Attempts after the first one that end a full random pause, for a call that waits as configured
    /// ([`crate::Wait::Configured`]) when `acquire_timeout` is not set (with it set, that time alone
    /// bounds the wait). Retries woken early by a release notification do not count, but all retries
    /// stop once the time `retry_count + 1` rounds of the longest pause and a node deadline would take
    /// has passed. With the defaults: about 0.5-1 s, at most 1.65 s. Default: `10`.
    pub retry_count: u32,
    /// Base delay between attempts. Default: 50 ms.
    #[cfg_attr(feature = "serde", serde(with = "crate::units::duration"))]
    pub retry_delay: Duration,
    /// Random extra delay, uniform in `[0, retry_jitter]`, so contenders do not retry in lockstep.
    /// Default: 50 ms.
    #[cfg_attr(feature = "serde", serde(with = "crate::units::duration"))]
    pub retry_jitter: Duration,
    /// Overall bound on one acquire that waits as configured ([`crate::Wait::Configured`], every form
    /// that takes no wait of its own): it retries until acquired or this long has passed since the
    /// call began (the local queue included), however many retries that takes, and then fails with
    /// [`LockError::Timeout`](crate::LockError::Timeout). Default: `None` (bounded by `retry_count`).
    #[cfg_attr(feature = "serde", serde(with = "crate::units::maybe_duration"))]
    pub acquire_timeout: Option<Duration>,
    /// Largest TTL accepted by acquire and extend: the maximum lock lifetime, which is also how long a
    /// restarted node stays quarantined. Use renewal for longer work. Default: 60 s.
    #[cfg_attr(feature = "serde", serde(with = "crate::units::duration"))]
    pub max_ttl: Duration,
    /// Longest resource name in bytes. Default: 1024.
    pub max_resource_len: usize,
    /// Bound on connecting to one node (TCP + AUTH + SELECT). Default: 1 s. Also how long, at least
    /// a second, a connection may owe a reply without reading anything before it is taken for dead
    /// (a node gone without a FIN or an RST) and reopened: noticed one to two of these after the
    /// first reply that did not come.
    #[cfg_attr(feature = "serde", serde(with = "crate::units::duration"))]
    pub connect_timeout: Duration,
    /// Requests queued or in flight per node before new ones fail fast with backpressure (a last
    /// resort: admission control keeps the queues below it, admitting at most `max_pending / 4`
    /// rounds even when `max_in_flight` is larger). Default: 65 536.
    pub max_pending: usize,
    /// Admission control: most rounds (acquire attempts, releases, extends, renewals) on the nodes at
    /// once, across every task using this engine. Past it, a round waits here, first come first
    /// served, **before** its validity clock starts, so a burst queues and slows down instead of
    /// turning this process's own backlog into node timeouts. A wait that outlasts the call's budget is
    /// [`crate::LockError::Overloaded`]. Must be above zero. Default: 1024.
    pub max_in_flight: usize,
    /// Most readers a read-write lock admits at once (must be above zero). Default: `u32::MAX`.
    pub max_readers: u32,
    /// Tasks of this process waiting for the same resource queue locally (FIFO), so only the head
    /// contends on the nodes; a release lets the next one in directly. Default: `true`.
    pub local_queue: bool,
    /// Releases publish on the lock's key name and waiters subscribe, so a waiter in another process
    /// wakes at the release instead of at its retry timer (the timer stays as the fallback). Default: `true`.
    pub notify_releases: bool,
    /// With `notify_releases` and `local_queue`: the plain lock's cross-process hand-off
    /// (`protocol::handoff` in the source): waiters in other processes queue on the nodes in the
    /// order they began waiting, and a release sets the key to the first one's value and tells only
    /// it, which then holds the lock without a round of its own, instead of every process's queue
    /// head racing at each release (the measurements are in the repository's `results/README.md`). Needs `+zadd +zrem +zrange +zpopmin +pexpire +publish` for
    /// an ACL'd lock user. Default: `true`.
    pub cross_process_handoff: bool,
    /// PEM file of the CA certificates to trust for `rediss://` nodes. `None`: the Mozilla root set.
    /// Default: `None`.
    pub tls_ca_file: Option<std::path::PathBuf>,
    /// Crashed-node quarantine: a node up for less than `max_ttl` (the maximum lock lifetime), or whose
    /// `run_id` changed across a reconnect, does not vote in any quorum until it has been up that long.
    /// Turn it off only for nodes that keep their data across crashes (`appendfsync always`): with it on,
    /// a majority restart means no lock for `max_ttl`, and neither does a node set started less than
    /// `max_ttl` ago. Default: `true`.
    pub quarantine: bool,
    /// Clock-jump guard: every acquire round first reads each node's `TIME` in the same pipeline, and a
    /// node whose wall clock moved faster than this process's monotonic clock by more than
    /// `drift_factor` (it expires keys early: an operator's step, an NTP step, a VM resumed from a
    /// snapshot) does not vote for `max_ttl`. See the clock-jump guard in `docs/guide.md` for what it
    /// assumes.
    /// Default: `true`.
    pub clock_guard: bool,
    /// With `local_queue`: how many times in a row a lock may be handed to a waiting task of this
    /// process without releasing it on the nodes (0 disables hand-off). The bound is what lets other
    /// processes in: a longer streak costs their waiters time, a shorter one a cross-process turn
    /// (a release, a wake-up and an acquire) more often. Default: 8 (the sweep that chose it is in the
    /// repository's `results/README.md`).
    pub max_local_handoffs: u32,
    /// Largest reply, in bytes, a node may send on the engine's own connections (lock commands, the
    /// handshake, release notifications), and so the most one connection buffers for an incomplete
    /// reply. A node that declares or sends more (or nests arrays deeper than 8 levels) has its
    /// connection closed: a [`NodeError::Protocol`](crate::NodeError::Protocol) naming the node and the
    /// bound. Not applied by the `fred` transport (see `docs/guide.md`, "Guarantees"). Must be in
    /// 16 KiB..=1 GiB: the largest reply the engine asks for is `INFO server`, a few KiB. Default: 4 MiB.
    pub max_reply_size: usize,
    /// Holder label: who holds a lock, for operators ([`crate::Redlock::inspect`] shows it). When set,
    /// an exclusive acquire (`acquire`, `try_acquire`, renewed, scoped and owner holds) sends a small
    /// script instead of `SET NX PX` that also writes `prefix{resource}:holder` — a digest of the
    /// lock value and this label, for `max_ttl` and kept by every extend at least as long as the
    /// lock — in the same round trip. Such locks' renewals are not coalesced with others'. Other
    /// kinds carry no label. At most 256 bytes, no control characters. Default: `None` (plain
    /// `SET NX PX`).
    pub holder_label: Option<String>,
    /// Native lock commands where a node's server has them: on Valkey 9.0 and later an exclusive
    /// (also fenced, write) lock's release is `DELIFEQ` and its extend and renewal
    /// `SET ... IFEQ ... GET PX`, read back exactly as the scripts answer; other servers and
    /// kinds keep the scripts. `false` sends the scripts everywhere (to compare, or to pin
    /// behaviour). Pipelined transport only. Default: `true`.
    pub native_commands: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            nodes: Vec::new(),
            transport: Transport::default(),
            key_prefix: b"redlock:".to_vec(),
            key_format: KeyFormat::Tagged,
            drift_factor: 0.01,
            node_timeout: None,
            min_validity_factor: 0.1,
            retry_count: 10,
            retry_delay: Duration::from_millis(50),
            retry_jitter: Duration::from_millis(50),
            acquire_timeout: None,
            max_ttl: Duration::from_secs(60),
            clock_guard: true,
            max_resource_len: 1024,
            connect_timeout: Duration::from_secs(1),
            max_pending: 65_536,
            max_in_flight: 1024,
            max_readers: u32::MAX,
            tls_ca_file: None,
            local_queue: true,
            quarantine: true,
            notify_releases: true,
            cross_process_handoff: true,
            max_local_handoffs: 8,
            max_reply_size: crate::transport::bounded::DEFAULT_MAX_SIZE,
            holder_label: None,
            native_commands: true,
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Destructured so that a new field is a compile error here until it is shown (or hidden).
        let Self {
            nodes,
            transport,
            key_prefix,
            key_format,
            drift_factor,
            node_timeout,
            min_validity_factor,
            retry_count,
            retry_delay,
            retry_jitter,
            acquire_timeout,
            max_ttl,
            max_resource_len,
            connect_timeout,
            max_pending,
            max_in_flight,
            max_readers,
            local_queue,
            notify_releases,
            cross_process_handoff,
            tls_ca_file,
            quarantine,
            clock_guard,
            max_local_handoffs,
            max_reply_size,
            holder_label,
            native_commands,
        } = self;
        let nodes: Vec<String> = nodes.iter().map(|url| crate::addr::redact(url)).collect();
        f.debug_struct("Config")
            .field("nodes", &nodes)
            .field("transport", transport)
            .field("key_prefix", &String::from_utf8_lossy(key_prefix))
            .field("key_format", key_format)
            .field("drift_factor", drift_factor)
            .field("node_timeout", node_timeout)
            .field("min_validity_factor", min_validity_factor)
            .field("retry_count", retry_count)
            .field("retry_delay", retry_delay)
            .field("retry_jitter", retry_jitter)
            .field("acquire_timeout", acquire_timeout)
            .field("max_ttl", max_ttl)
            .field("max_resource_len", max_resource_len)
            .field("connect_timeout", connect_timeout)
            .field("max_pending", max_pending)
            .field("max_in_flight", max_in_flight)
            .field("max_readers", max_readers)
            .field("local_queue", local_queue)
            .field("notify_releases", notify_releases)
            .field("cross_process_handoff", cross_process_handoff)
            .field("tls_ca_file", tls_ca_file)
            .field("quarantine", quarantine)
            .field("clock_guard", clock_guard)
            .field("max_local_handoffs", max_local_handoffs)
            .field("max_reply_size", max_reply_size)
            .field("holder_label", holder_label)
            .field("native_commands", native_commands)
            .finish()
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
