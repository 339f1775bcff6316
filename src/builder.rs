//! [`Builder`]: a fluent way to fill a [`Config`] and connect.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::Config;
use crate::engine::Redlock;
use crate::error::LockError;
use crate::transport::Transport;

/// Builds a [`Redlock`]; every [`Config`] field has a setter, with the default documented on the field.
///
/// Setters take any value; [`build`](Self::build) checks them together and returns
/// [`LockError::InvalidConfig`] naming what is wrong (a value out of range, or a combination that
/// could never grant a lock).
///
/// ```
/// use std::time::Duration;
/// use redlock_engine::{Builder, Config};
/// let base = Config { nodes: vec!["redis://127.0.0.1:6379".into()], ..Config::default() };
/// let builder = Builder::from(base).max_ttl(Duration::from_secs(30)).node_timeout(None);
/// assert_eq!(builder.config().max_ttl, Duration::from_secs(30));
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct Builder {
    config: Config,
}

impl From<Config> for Builder {
    /// Starts from `config`: every field as it is there.
    fn from(config: Config) -> Self {
        Self { config }
    }
}

impl Redlock {
    /// A [`Builder`] with the default configuration.
    pub fn builder() -> Builder {
        Builder::new()
    }
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

    /// See [`Config::key_format`].
    pub fn key_format(mut self, format: crate::KeyFormat) -> Self {
        self.config.key_format = format;
        self
    }

    /// Keys shared with other Redlock clients (`rslock`, redsync, node-redlock): the key of a
    /// resource is its name, exactly — [`crate::KeyFormat::Plain`] and an empty prefix. Call
    /// [`Self::key_prefix`] afterwards to keep one (the other clients then lock `prefix + name`).
    pub fn shared_keys(self) -> Self {
        self.key_format(crate::KeyFormat::Plain)
            .key_prefix(Vec::new())
    }

    /// See [`Config::drift_factor`].
    pub fn drift_factor(mut self, factor: f64) -> Self {
        self.config.drift_factor = factor;
        self
    }

    /// See [`Config::node_timeout`]: a `Duration`, or `None` for the deadline fitted to the network.
    pub fn node_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.config.node_timeout = timeout.into();
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

    /// See [`Config::acquire_timeout`]: a `Duration`, or `None` for no bound but the retries'.
    pub fn acquire_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.config.acquire_timeout = timeout.into();
        self
    }

    /// See [`Config::retry_count`].
    pub fn retry_count(mut self, count: u32) -> Self {
        self.config.retry_count = count;
        self
    }

    /// See [`Config::retry_delay`].
    pub fn retry_delay(mut self, delay: Duration) -> Self {
        self.config.retry_delay = delay;
        self
    }

    /// See [`Config::retry_jitter`].
    pub fn retry_jitter(mut self, jitter: Duration) -> Self {
        self.config.retry_jitter = jitter;
        self
    }

    /// See [`Config::max_resource_len`].
    pub fn max_resource_len(mut self, bytes: usize) -> Self {
        self.config.max_resource_len = bytes;
        self
    }

    /// See [`Config::max_readers`].
    pub fn max_readers(mut self, max: u32) -> Self {
        self.config.max_readers = max;
        self
    }

    /// See [`Config::tls_ca_file`]: a PEM file, or `None` for the Mozilla root set.
    pub fn tls_ca_file(mut self, path: impl Into<Option<PathBuf>>) -> Self {
        self.config.tls_ca_file = path.into();
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

    /// See [`Config::clock_guard`]. Off only to measure its cost, or to show the hazard it covers.
    pub fn clock_guard(mut self, on: bool) -> Self {
        self.config.clock_guard = on;
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

    /// See [`Config::cross_process_handoff`].
    pub fn cross_process_handoff(mut self, on: bool) -> Self {
        self.config.cross_process_handoff = on;
        self
    }

    /// See [`Config::native_commands`].
    pub fn native_commands(mut self, on: bool) -> Self {
        self.config.native_commands = on;
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

    /// See [`Config::holder_label`]: who holds this engine's exclusive locks, shown by inspect.
    pub fn holder_label(mut self, label: impl Into<Option<String>>) -> Self {
        self.config.holder_label = label.into();
        self
    }

    /// The configuration built so far.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The configuration built so far, to keep or to change by hand.
    pub fn into_config(self) -> Config {
        self.config
    }

    /// Validates the configuration and connects to every node (see [`Redlock::new`]).
    ///
    /// # Errors
    /// [`LockError::InvalidConfig`] for a value out of range or an invalid combination (for example
    /// `drift_factor + min_validity_factor` of 1 or more: no lock would ever be valid long enough).
    pub async fn build(self) -> Result<Redlock, LockError> {
        Redlock::new(self.config).await
    }
}
