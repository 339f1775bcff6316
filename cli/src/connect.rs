//! The engine every subcommand works through, built from the global options.

use std::time::Duration;

use redlock_engine::{Builder, Redlock};

use crate::args::Options;
use crate::exit::{Failure, NO_NODE, USAGE};

/// Builds the engine and checks that at least one node answered: with none, every subcommand would
/// only report timeouts, so it is one clear error instead.
/// `wait`: retry acquires until then (`acquire --wait`) instead of the default retry count.
pub async fn engine(
    opts: &Options,
    label: Option<String>,
    wait: Option<Duration>,
) -> Result<Redlock, Failure> {
    let mut builder = Builder::new()
        .nodes(opts.nodes.iter().map(|n| n.trim().to_string()))
        .key_prefix(opts.prefix.as_bytes().to_vec())
        .connect_timeout(opts.connect_timeout)
        .max_ttl(opts.max_ttl)
        .quarantine(!opts.no_quarantine)
        .tls_ca_file(opts.tls_ca.clone())
        .holder_label(label);
    if let Some(wait) = wait {
        builder = builder.retry_count(u32::MAX).acquire_timeout(wait);
    }
    let engine = builder
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
        return Err(Failure::new(NO_NODE, format!("no node reachable ({why})")));
    }
    Ok(engine)
}
