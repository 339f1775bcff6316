//! The engine every subcommand works through, built from the global options.

use redlock_engine::{Builder, Config, KeyFormat, Redlock};

use crate::args::Options;
use crate::exit::{Failure, UNAVAILABLE, USAGE};

/// Builds the engine and checks that at least one node answered: with none, every subcommand would
/// only report timeouts, so it is one clear error instead (also for a blocking `acquire`: a node
/// list that reaches nothing is far likelier a typo than an outage worth waiting out).
/// How long an acquire waits is its own request's (`acquire.rs`), not the engine's.
pub async fn engine(opts: &Options, label: Option<String>) -> Result<Redlock, Failure> {
    let config = config(opts, std::env::vars()).map_err(|e| Failure::new(USAGE, e))?;
    let engine = Builder::from(config)
        .holder_label(label)
        .build()
        .await
        .map_err(|e| Failure::new(USAGE, e.to_string()))?;
    if engine.connected_nodes() == 0 {
        let why = engine
            .nodes_status()
            .into_iter()
            .map(|s| match s.last_error {
                Some(e) => format!("{}: {e}", s.node),
                None => format!("{}: not connected", s.node),
            })
            .collect::<Vec<_>>()
            .join("; ");
        return Err(Failure::new(
            UNAVAILABLE,
            format!("no node reachable ({why})"),
        ));
    }
    Ok(engine)
}

/// The connect timeout in force: the flag's, REDLOCK_CONNECT_TIMEOUT's, or the library's default.
pub fn connect_timeout(opts: &Options) -> std::time::Duration {
    config(opts, std::env::vars()).map_or(Config::default().connect_timeout, |c| c.connect_timeout)
}

/// The services' configuration as `Config::from_env` reads it from `vars`, then the flags over it:
/// the same `REDLOCK_*` variables mean the same keys, prefix and node set here as in a service.
/// `--nodes` (or REDLOCK_NODES, which clap reads into it) stands for REDLOCK_NODES.
fn config(
    opts: &Options,
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Config, String> {
    let nodes = opts
        .nodes
        .iter()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .collect::<Vec<_>>()
        .join(",");
    if nodes.is_empty() {
        return Err("no nodes: give --nodes URL,... or set REDLOCK_NODES".into());
    }
    let vars = vars
        .into_iter()
        .filter(|(name, _)| name.starts_with("REDLOCK_") && name != "REDLOCK_NODES")
        .chain([("REDLOCK_NODES".to_string(), nodes)]);
    let mut config = Config::from_vars(vars).map_err(|e| e.to_string())?;
    if let Some(prefix) = &opts.prefix {
        config.key_prefix = prefix.as_bytes().to_vec();
    }
    if opts.plain_keys {
        config.key_format = KeyFormat::Plain;
    }
    if let Some(timeout) = opts.connect_timeout {
        config.connect_timeout = timeout;
    }
    if let Some(max_ttl) = opts.max_ttl {
        config.max_ttl = max_ttl;
    }
    if opts.no_quarantine {
        config.quarantine = false;
    }
    if let Some(ca) = &opts.tls_ca {
        config.tls_ca_file = Some(ca.clone());
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_services_variables_apply_and_flags_override_them() {
        let env = vars(&[
            ("REDLOCK_KEY_PREFIX", "svc:"),
            ("REDLOCK_MAX_TTL", "90s"),
            ("REDLOCK_QUARANTINE", "false"),
            ("REDLOCK_KEY_FORMAT", "plain"),
            ("REDLOCK_HOLDER_LABEL", "the service"),
            ("HOME", "/root"),
        ]);
        let opts = Options::parse_from(["redlock", "--nodes", "redis://h:1", "nodes"]);
        let c = config(&opts, env.clone()).unwrap();
        assert_eq!(c.key_prefix, b"svc:");
        assert_eq!(c.max_ttl, std::time::Duration::from_secs(90));
        assert!(!c.quarantine);
        assert_eq!(c.key_format, KeyFormat::Plain);
        assert_eq!(c.nodes, ["redis://h:1"]);
        let opts = Options::parse_from([
            "redlock",
            "--nodes",
            "redis://h:2",
            "--prefix",
            "ops:",
            "--max-ttl",
            "10s",
            "nodes",
        ]);
        let c = config(&opts, env).unwrap();
        assert_eq!(
            (c.key_prefix.as_slice(), c.max_ttl),
            (&b"ops:"[..], std::time::Duration::from_secs(10))
        );
        assert_eq!(c.nodes, ["redis://h:2"]);
        // Nothing set: the library's defaults, which the flags' documented defaults are.
        let c = config(&opts_only("redis://h:1"), vars(&[])).unwrap();
        let d = Config::default();
        assert_eq!(
            (c.key_prefix, c.max_ttl, c.quarantine),
            (d.key_prefix, d.max_ttl, d.quarantine)
        );
        // A bad variable is named, as the services' `from_env` names it.
        let err = config(
            &opts_only("redis://h:1"),
            vars(&[("REDLOCK_MAX_TTL", "soon")]),
        )
        .unwrap_err();
        assert!(err.contains("REDLOCK_MAX_TTL"), "{err}");
    }

    fn opts_only(nodes: &str) -> Options {
        Options::parse_from(["redlock", "--nodes", nodes, "nodes"])
    }
}
