//! The engine every subcommand works through, built from the global options.

use redlock_engine::{Builder, KeyFormat, Redlock};

use crate::args::Options;
use crate::exit::{Failure, UNAVAILABLE, USAGE};

/// Builds the engine and checks that at least one node answered: with none, every subcommand would
/// only report timeouts, so it is one clear error instead (also for a blocking `acquire`: a node
/// list that reaches nothing is far likelier a typo than an outage worth waiting out).
/// How long an acquire waits is its own request's (`acquire.rs`), not the engine's.
pub async fn engine(opts: &Options, label: Option<String>) -> Result<Redlock, Failure> {
    let engine = Builder::new()
        .nodes(opts.nodes.iter().map(|n| n.trim().to_string()))
        .key_prefix(opts.prefix.as_bytes().to_vec())
        .key_format(if opts.plain_keys {
            KeyFormat::Plain
        } else {
            KeyFormat::Tagged
        })
        .connect_timeout(opts.connect_timeout)
        .max_ttl(opts.max_ttl)
        .quarantine(!opts.no_quarantine)
        .tls_ca_file(opts.tls_ca.clone())
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
