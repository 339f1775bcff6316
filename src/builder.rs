//! [`Builder`]: a fluent way to fill a [`Config`] and connect.

use std::time::Duration;

use crate::config::Config;
use crate::error::LockError;
use crate::transport::Transport;
use crate::Redlock;

/// Builds a [`Redlock`]; every setter has the default documented on the matching [`Config`] field.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct Builder {
    config: Config,
}

impl Builder {
    /// Starts from [`Config::default`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The node URLs (`redis://[user:password@]host:port[/db]`), one per independent master.
    pub fn nodes<I, S>(mut self, urls: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config.nodes = urls.into_iter().map(Into::into).collect();
        self
    }

    /// See [`Config::transport`].
    pub fn transport(mut self, transport: Transport) -> Self {
        self.config.transport = transport;
        self
    }

    /// See [`Config::key_prefix`].
    pub fn key_prefix(mut self, prefix: impl Into<Vec<u8>>) -> Self {
        self.config.key_prefix = prefix.into();
        self
    }

    /// See [`Config::drift_factor`].
    pub fn drift_factor(mut self, factor: f64) -> Self {
        self.config.drift_factor = factor;
        self
    }

    /// See [`Config::node_timeout`].
    pub fn node_timeout(mut self, timeout: Duration) -> Self {
        self.config.node_timeout = Some(timeout);
        self
    }

    /// See [`Config::min_validity_factor`].
    pub fn min_validity_factor(mut self, factor: f64) -> Self {
        self.config.min_validity_factor = factor;
        self
    }

    /// Retries after the first attempt, and the random pause between them: `delay + uniform(0, jitter)`.
    pub fn retry(mut self, count: u32, delay: Duration, jitter: Duration) -> Self {
        self.config.retry_count = count;
        self.config.retry_delay = delay;
        self.config.retry_jitter = jitter;
        self
    }

    /// See [`Config::acquire_timeout`].
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.config.acquire_timeout = Some(timeout);
        self
    }

    /// See [`Config::max_ttl`].
    pub fn max_ttl(mut self, max: Duration) -> Self {
        self.config.max_ttl = max;
        self
    }

    /// See [`Config::quarantine`]. Turn it off only for nodes that keep their data across crashes, or
    /// that this process has just started itself (they hold no lock anyone could lose).
    pub fn quarantine(mut self, on: bool) -> Self {
        self.config.quarantine = on;
        self
    }

    /// See [`Config::local_queue`].
    pub fn local_queue(mut self, on: bool) -> Self {
        self.config.local_queue = on;
        self
    }

    /// See [`Config::notify_releases`].
    pub fn notify_releases(mut self, on: bool) -> Self {
        self.config.notify_releases = on;
        self
    }

    /// See [`Config::max_local_handoffs`].
    pub fn max_local_handoffs(mut self, max: u32) -> Self {
        self.config.max_local_handoffs = max;
        self
    }

    /// See [`Config::max_in_flight`].
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.config.max_in_flight = max;
        self
    }

    /// See [`Config::max_pending`].
    pub fn max_pending(mut self, max: usize) -> Self {
        self.config.max_pending = max;
        self
    }

    /// See [`Config::connect_timeout`].
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.config.connect_timeout = timeout;
        self
    }

    /// See [`Config::max_reply_size`].
    pub fn max_reply_size(mut self, bytes: usize) -> Self {
        self.config.max_reply_size = bytes;
        self
    }

    /// The configuration built so far.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Validates the configuration and connects to every node (see [`Redlock::new`]).
    pub async fn build(self) -> Result<Redlock, LockError> {
        Redlock::new(self.config).await
    }
}
