//! [`Settings`]: a [`Config`] checked field by field and together, into what the engine runs on;
//! every mistake a typed [`LockError::InvalidConfig`] saying what is wrong.

use std::collections::HashSet;
use std::time::Duration;

use crate::addr::NodeAddr;
use crate::algo::keys::KeyFormat;
use crate::config::{Config, MAX_NODES};
use crate::error::LockError;
use crate::transport::{ConnectOptions, Transport};

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
