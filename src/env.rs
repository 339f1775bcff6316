//! [`Config::from_env`]: the configuration from `REDLOCK_*` environment variables, for services
//! configured the twelve-factor way. The variables and their rules are documented on that public
//! method (docs.rs shows it; this module is private).

use crate::config::Config;
use crate::error::LockError;
use crate::units::parse_duration;

impl Config {
    /// The defaults, overridden by every `REDLOCK_*` variable that is set; then build with
    /// [`Redlock::new(config)`](crate::Redlock::new) or, to set more in code,
    /// [`Builder::from(config)`](crate::Builder).
    ///
    /// Durations are a number and a unit, as [`parse_duration`] reads them: `500ms`, `2s`, `1.5s`,
    /// `1m`, `1h` (also `us`, `ns`). A bare number is refused, `0` excepted: write `10s`, not `10`.
    /// A variable not set keeps the default; one set to something unusable is a
    /// [`LockError::InvalidConfig`] naming it (never silently the default).
    ///
    /// | variable | field | example |
    /// |---|---|---|
    /// | `REDLOCK_NODES` | [`Config::nodes`] (comma-separated, required) | `redis://10.0.0.1:6379,redis://10.0.0.2:6379` |
    /// | `REDLOCK_KEY_PREFIX` | [`Config::key_prefix`] | `locks:` |
    /// | `REDLOCK_KEY_FORMAT` | [`Config::key_format`] | `tagged` / `plain` |
    /// | `REDLOCK_MAX_TTL` | [`Config::max_ttl`] | `60s` |
    /// | `REDLOCK_NODE_TIMEOUT` | [`Config::node_timeout`] | `50ms` |
    /// | `REDLOCK_ACQUIRE_TIMEOUT` | [`Config::acquire_timeout`] | `5s` |
    /// | `REDLOCK_CONNECT_TIMEOUT` | [`Config::connect_timeout`] | `2s` |
    /// | `REDLOCK_RETRY_COUNT` | [`Config::retry_count`] | `10` |
    /// | `REDLOCK_RETRY_DELAY` | [`Config::retry_delay`] | `100ms` |
    /// | `REDLOCK_RETRY_JITTER` | [`Config::retry_jitter`] | `50ms` |
    /// | `REDLOCK_DRIFT_FACTOR` | [`Config::drift_factor`] | `0.01` |
    /// | `REDLOCK_MAX_IN_FLIGHT` | [`Config::max_in_flight`] | `1024` |
    /// | `REDLOCK_QUARANTINE` | [`Config::quarantine`] | `true` / `false` |
    /// | `REDLOCK_CLOCK_GUARD` | [`Config::clock_guard`] | `true` / `false` |
    /// | `REDLOCK_HOLDER_LABEL` | [`Config::holder_label`] | `orders-api@host-3` |
    /// | `REDLOCK_TLS_CA_FILE` | [`Config::tls_ca_file`] | `/etc/ssl/redis-ca.pem` |
    ///
    /// With the `serde` feature, [`Config`] also reads from (and writes to) any serde format (a TOML
    /// or JSON file, say) with the same names as its fields, durations written as here
    /// (`max_ttl = "60s"`), the key prefix as text, missing fields at their defaults and unknown
    /// ones refused.
    ///
    /// ```
    /// use std::time::Duration;
    /// use redlock_engine::{Builder, Config};
    /// // `Config::from_env()` reads the same names from the process's environment.
    /// let config = Config::from_vars([
    ///     ("REDLOCK_NODES", "redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379"),
    ///     ("REDLOCK_ACQUIRE_TIMEOUT", "5s"),
    /// ])?;
    /// assert_eq!(config.acquire_timeout, Some(Duration::from_secs(5)));
    /// // `Redlock::new(config).await?` connects; a builder can change more first.
    /// let builder = Builder::from(config).max_ttl(Duration::from_secs(30));
    /// assert_eq!(builder.config().nodes.len(), 3);
    /// # Ok::<(), redlock_engine::LockError>(())
    /// ```
    ///
    /// # Errors
    /// [`LockError::InvalidConfig`] when `REDLOCK_NODES` is missing or a variable cannot be read.
    pub fn from_env() -> Result<Self, LockError> {
        Self::from_vars(std::env::vars())
    }

    /// [`from_env`](Self::from_env) over the given `(name, value)` pairs instead of the process's
    /// environment (for tests, or a file of such lines read by the caller).
    ///
    /// # Errors
    /// As [`from_env`](Self::from_env).
    pub fn from_vars<I, K, V>(vars: I) -> Result<Self, LockError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut config = Config::default();
        let mut nodes = false;
        for (name, value) in vars {
            let (name, value) = (name.as_ref(), value.as_ref().trim());
            let bad = |why: &str| LockError::InvalidConfig(format!("{name}={value:?}: {why}"));
            let duration = || {
                parse_duration(value).map_err(|e| LockError::InvalidConfig(format!("{name}: {e}")))
            };
            let number = || value.parse::<u64>().map_err(|_| bad("not a whole number"));
            let flag = || match value {
                "1" | "true" | "yes" | "on" => Ok(true),
                "0" | "false" | "no" | "off" => Ok(false),
                _ => Err(bad("not true or false")),
            };
            match name {
                "REDLOCK_NODES" => {
                    config.nodes = value
                        .split(',')
                        .map(str::trim)
                        .filter(|url| !url.is_empty())
                        .map(String::from)
                        .collect();
                    nodes = true;
                }
                "REDLOCK_KEY_PREFIX" => config.key_prefix = value.as_bytes().to_vec(),
                "REDLOCK_MAX_TTL" => config.max_ttl = duration()?,
                "REDLOCK_NODE_TIMEOUT" => config.node_timeout = Some(duration()?),
                "REDLOCK_ACQUIRE_TIMEOUT" => config.acquire_timeout = Some(duration()?),
                "REDLOCK_CONNECT_TIMEOUT" => config.connect_timeout = duration()?,
                "REDLOCK_RETRY_COUNT" => {
                    config.retry_count = u32::try_from(number()?).map_err(|_| bad("too large"))?
                }
                "REDLOCK_RETRY_DELAY" => config.retry_delay = duration()?,
                "REDLOCK_RETRY_JITTER" => config.retry_jitter = duration()?,
                "REDLOCK_DRIFT_FACTOR" => {
                    config.drift_factor = value.parse().map_err(|_| bad("not a number"))?
                }
                "REDLOCK_MAX_IN_FLIGHT" => {
                    config.max_in_flight =
                        usize::try_from(number()?).map_err(|_| bad("too large"))?
                }
                "REDLOCK_QUARANTINE" => config.quarantine = flag()?,
                "REDLOCK_CLOCK_GUARD" => config.clock_guard = flag()?,
                "REDLOCK_KEY_FORMAT" => {
                    config.key_format = match value {
                        "tagged" => crate::KeyFormat::Tagged,
                        "plain" => crate::KeyFormat::Plain,
                        _ => return Err(bad("not `tagged` or `plain`")),
                    }
                }
                "REDLOCK_HOLDER_LABEL" => config.holder_label = Some(value.to_string()),
                "REDLOCK_TLS_CA_FILE" => config.tls_ca_file = Some(value.into()),
                _ => {}
            }
        }
        if !nodes {
            return Err(LockError::InvalidConfig(
                "REDLOCK_NODES is not set (comma-separated redis:// URLs)".into(),
            ));
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn variables_override_the_defaults_and_bad_ones_are_named() {
        let config = Config::from_vars([
            ("REDLOCK_NODES", "redis://a:1, redis://b:2,"),
            ("REDLOCK_MAX_TTL", "90s"),
            ("REDLOCK_QUARANTINE", "false"),
            ("REDLOCK_ACQUIRE_TIMEOUT", "250ms"),
            ("PATH", "/usr/bin"),
        ])
        .unwrap();
        assert_eq!(config.nodes, ["redis://a:1", "redis://b:2"]);
        assert_eq!(config.max_ttl, Duration::from_secs(90));
        assert!(!config.quarantine);
        assert_eq!(config.acquire_timeout, Some(Duration::from_millis(250)));
        assert_eq!(config.retry_count, Config::default().retry_count);
        let err = Config::from_vars([
            ("REDLOCK_NODES", "redis://a:1"),
            ("REDLOCK_MAX_TTL", "soon"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("REDLOCK_MAX_TTL"), "{err}");
        // A bare number could be seconds or milliseconds: refused, naming the variable.
        let err = Config::from_vars([("REDLOCK_NODES", "redis://a:1"), ("REDLOCK_MAX_TTL", "10")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("REDLOCK_MAX_TTL") && err.contains("give a unit: 10s or 10ms"),
            "{err}"
        );
        assert!(
            Config::from_vars([("REDLOCK_MAX_TTL", "1s")]).is_err(),
            "no nodes"
        );
    }

    #[cfg(feature = "serde")]
    #[test]
    fn a_config_file_reads_with_human_durations() {
        let json = r#"{"nodes": ["redis://a:1"], "max_ttl": "90s", "node_timeout": "50ms",
            "key_prefix": "locks:", "transport": "pipeline", "quarantine": false}"#;
        let config: Config = serde_json::from_str(json).unwrap();
        assert_eq!(config.max_ttl, Duration::from_secs(90));
        assert_eq!(config.node_timeout, Some(Duration::from_millis(50)));
        assert_eq!(config.key_prefix, b"locks:");
        assert!(!config.quarantine);
        assert_eq!(config.retry_delay, Config::default().retry_delay);
        let back: Config = serde_json::from_str(&serde_json::to_string(&config).unwrap()).unwrap();
        assert_eq!(back.max_ttl, config.max_ttl);
        let err = serde_json::from_str::<Config>(r#"{"max_ttl": "soon"}"#).unwrap_err();
        assert!(err.to_string().contains("soon"), "{err}");
        let err = serde_json::from_str::<Config>(r#"{"max_ttl": "10"}"#).unwrap_err();
        assert!(
            err.to_string().contains("give a unit: 10s or 10ms"),
            "{err}"
        );
        assert!(
            serde_json::from_str::<Config>(r#"{"max_tll": "1s"}"#).is_err(),
            "typo refused"
        );
    }
}
