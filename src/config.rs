//! [`Config`]: every knob with its default, and the validation that turns it into the engine's settings.

use std::collections::HashSet;
use std::time::Duration;

use crate::addr::NodeAddr;
use crate::algo::keys::KeyFormat;
use crate::error::LockError;
use crate::transport::{ConnectOptions, Transport};

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
    /// [`LockError::Timeout`]. Default: `None` (bounded by `retry_count`).
    #[cfg_attr(feature = "serde", serde(with = "crate::units::maybe_duration"))]
    pub acquire_timeout: Option<Duration>,
    /// Largest TTL accepted by acquire and extend: the maximum lock lifetime, which is also how long a
    /// restarted node stays quarantined. Use renewal for longer work. Default: 60 s.
    #[cfg_attr(feature = "serde", serde(with = "crate::units::duration"))]
    pub max_ttl: Duration,
    /// Longest resource name in bytes. Default: 1024.
    pub max_resource_len: usize,
    /// Bound on connecting to one node (TCP + AUTH + SELECT). Default: 1 s.
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
    /// order they began waiting, and a release reserves the key for the first one and wakes only
    /// it, instead of every process's queue head racing at each release. Measured at 64 workers on
    /// 4 keys (results/2026-12-02/handoff/): 16 processes x 4, 2.2x the cycles/s, a fifth of the p99
    /// and a third of the p99.9 of the race; 4 x 16, 1.2x the cycles/s at a lower p99.9. Needs `+zadd +zrem +zrange
    /// +zpopmin +pexpire +publish` for an ACL'd lock user. Default: `true`.
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
    /// (a release, a wake-up and an acquire) more often. Default: 8 (4 processes x 16 workers on 4
    /// keys: 1.5x the cycles/s of 4 at a p99.9 below 10 ms; `results/2026-12-02/contention-grace/sweep.md`).
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

/// A validated configuration: what the engine runs on.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) nodes: Vec<NodeAddr>,
    pub(crate) transport: Transport,
    pub(crate) key_prefix: Vec<u8>,
    pub(crate) key_format: KeyFormat,
    pub(crate) timing: crate::algo::timing::Timing,
    pub(crate) retry: crate::algo::retry::RetryPolicy,
    pub(crate) acquire_timeout: Option<Duration>,
    pub(crate) max_ttl: Duration,
    pub(crate) max_resource_len: usize,
    pub(crate) max_readers: u32,
    pub(crate) local_queue: bool,
    pub(crate) notify_releases: bool,
    pub(crate) cross_process_handoff: bool,
    pub(crate) max_local_handoffs: u32,
    pub(crate) max_in_flight: usize,
    pub(crate) connect: ConnectOptions,
    pub(crate) holder_label: Option<bytes::Bytes>,
}

impl Config {
    /// Checks every field and returns the settings the engine runs on, or a typed error saying what is wrong.
    pub(crate) fn validate(&self) -> Result<Settings, LockError> {
        let bad = |why: String| Err(LockError::InvalidConfig(why));
        if self.nodes.is_empty() {
            return bad("no nodes configured".into());
        }
        if self.nodes.len() > MAX_NODES {
            return bad(format!(
                "{} nodes configured, at most {MAX_NODES} are supported",
                self.nodes.len()
            ));
        }
        let mut nodes = Vec::with_capacity(self.nodes.len());
        let mut seen = HashSet::new();
        for (index, url) in self.nodes.iter().enumerate() {
            let addr = NodeAddr::parse(url)
                .map_err(|why| LockError::InvalidConfig(format!("node {index}: {why}")))?;
            if !seen.insert(addr.identity()) {
                return bad(format!(
                    "node {index} ({addr}) is listed twice; Redlock needs independent nodes"
                ));
            }
            nodes.push(addr);
        }
        if !(0.0..1.0).contains(&self.drift_factor) {
            return bad(format!(
                "drift_factor must be in [0, 1), got {}",
                self.drift_factor
            ));
        }
        if !(0.0..1.0).contains(&self.min_validity_factor) {
            return bad(format!(
                "min_validity_factor must be in [0, 1), got {}",
                self.min_validity_factor
            ));
        }
        // Combinations: each value may be in range and still leave no lock that can be granted.
        if self.drift_factor + self.min_validity_factor >= 1.0 {
            return bad(format!(
                "drift_factor + min_validity_factor must be below 1 (got {} + {}): no lock could \
                 keep its minimum validity",
                self.drift_factor, self.min_validity_factor
            ));
        }
        if self.node_timeout == Some(Duration::ZERO) {
            return bad("node_timeout must be above zero".into());
        }
        if self.node_timeout.is_some_and(|t| t >= self.max_ttl) {
            return bad(format!(
                "node_timeout {:?} must be below max_ttl {:?}: every TTL must be above the node timeout",
                self.node_timeout.unwrap_or_default(),
                self.max_ttl
            ));
        }
        if self.max_ttl.is_zero() {
            return bad("max_ttl must be above zero".into());
        }
        if self.max_resource_len == 0 {
            return bad("max_resource_len must be above zero".into());
        }
        if self.max_pending == 0 {
            return bad("max_pending must be above zero".into());
        }
        // tokio's semaphore holds at most `usize::MAX >> 3` permits.
        if self.max_in_flight == 0 || self.max_in_flight > 1 << 20 {
            return bad(format!(
                "max_in_flight must be in 1..=1048576, got {}",
                self.max_in_flight
            ));
        }
        // Durations feed `Instant` arithmetic; anything beyond a year is a mistake, not a setting.
        const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
        let durations = [
            ("max_ttl", Some(self.max_ttl)),
            ("acquire_timeout", self.acquire_timeout),
            ("retry_delay", Some(self.retry_delay)),
            ("retry_jitter", Some(self.retry_jitter)),
            ("node_timeout", self.node_timeout),
            ("connect_timeout", Some(self.connect_timeout)),
        ];
        for (name, value) in durations {
            if value.is_some_and(|d| d > YEAR) {
                return bad(format!("{name} is above one year"));
            }
        }
        if self.max_readers == 0 {
            return bad("max_readers must be above zero".into());
        }
        if !(16 << 10..=1 << 30).contains(&self.max_reply_size) {
            return bad(format!(
                "max_reply_size must be in 16 KiB..=1 GiB, got {} bytes",
                self.max_reply_size
            ));
        }
        if let Some(label) = &self.holder_label {
            if label.len() > 256 || label.chars().any(char::is_control) {
                return bad(format!(
                    "holder_label must be at most 256 bytes without control characters, got {} bytes",
                    label.len()
                ));
            }
        }
        if self.connect_timeout.is_zero() {
            return bad("connect_timeout must be above zero".into());
        }
        #[cfg(not(feature = "fred"))]
        if let Some(addr) = nodes
            .iter()
            .find(|n| matches!(n.topology, crate::addr::Topology::Sentinel { .. }))
        {
            return bad(format!(
                "{addr}: Sentinel node sets need the `fred` feature"
            ));
        }
        let tls = if nodes.iter().any(|n| n.tls) {
            let connector = crate::transport::connect::tls_connector(self.tls_ca_file.as_deref())
                .map_err(LockError::InvalidConfig)?;
            Some(connector)
        } else {
            None
        };
        Ok(Settings {
            nodes,
            transport: self.transport,
            key_prefix: self.key_prefix.clone(),
            key_format: self.key_format,
            timing: crate::algo::timing::Timing {
                drift_factor: self.drift_factor,
                node_timeout: self.node_timeout,
                min_validity_factor: self.min_validity_factor,
            },
            retry: crate::algo::retry::RetryPolicy {
                count: self.retry_count,
                delay: self.retry_delay,
                jitter: self.retry_jitter,
            },
            acquire_timeout: self.acquire_timeout,
            max_ttl: self.max_ttl,
            max_resource_len: self.max_resource_len,
            max_readers: self.max_readers,
            local_queue: self.local_queue,
            notify_releases: self.notify_releases,
            cross_process_handoff: self.cross_process_handoff,
            max_local_handoffs: self.max_local_handoffs,
            // Each admitted round queues one command per node and may leave one background release
            // behind; admission also waits while a majority of connections are half full, so a
            // quarter of `max_pending` keeps the hard limit out of reach (see `admission`).
            max_in_flight: self.max_in_flight.min((self.max_pending / 4).max(1)),
            holder_label: self
                .holder_label
                .as_ref()
                .map(|l| bytes::Bytes::copy_from_slice(l.as_bytes())),
            connect: ConnectOptions {
                connect_timeout: self.connect_timeout,
                max_pending: self.max_pending,
                reconnect_min: Duration::from_millis(20),
                // A node back from an outage should vote again within a fraction of a typical TTL,
                // not after a 2 s backoff; a refused connect on a LAN costs microseconds.
                reconnect_max: Duration::from_millis(250),
                quarantine: self.quarantine.then_some(self.max_ttl),
                clock_guard: self
                    .clock_guard
                    .then_some(crate::algo::clock::GuardSettings {
                        drift: self.drift_factor,
                        slack: crate::algo::clock::SLACK,
                        hold: self.max_ttl,
                    }),
                tls,
                limits: crate::transport::bounded::Limits {
                    max_size: self.max_reply_size,
                },
                // Set by the engine: the list is the lock kinds' (`crate::kinds::scripts`).
                scripts: &[],
                coalesce: &[],
                native: self.native_commands,
            },
        })
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
