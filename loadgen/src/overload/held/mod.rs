//! held: H renewed locks (`acquire_renewed`, TTL 3 s, renewed every second) held at once for a while.
//! Counts the locks lost — a false loss, since nobody else wants the keys — the renewals per second, and
//! what a renewal costs in CPU on the client and on the servers.
//!
//! Phases: acquire all (at most `--acquire-concurrency` in flight), hold for `--hold-for` (the measured
//! phase: CPU and renewals are deltas over it), release all (same bound).
//!
//! - this file: the run over every held count of an engine;
//! - [`hold`]: the measured phase both engines run (the hold, its losses sampled each second);
//! - [`record`]: the record both engines fill ([`HeldRecord`], one place for the hold's rates);
//! - [`redlock`]: the redlock engines, renewed by their watchdog;
//! - [`rslock`]: rslock, which has no watchdog: a renewal loop per lock around `LockManager::extend`.

pub mod hold;
pub mod record;
pub mod redlock;
pub mod rslock;

use crate::engines::redlock::build;
use crate::engines::{EngineKind, RetrySpec, Waiting};
use crate::nodes::addr::NodeUrl;
use crate::run::RunContext;

use super::args::Spec;
use redlock::Held;

pub use record::HeldRecord;

/// Runs every held count of `spec` on `kind`: redlock engines with the watchdog, rslock with a loop per
/// lock ([`rslock`]); raw gets an n/a record, the ceiling none.
pub async fn run(
    kind: EngineKind,
    waiting: Option<Waiting>,
    ctx: &RunContext<'_>,
    nodes: &[NodeUrl],
    spec: &Spec,
    tag: &str,
) -> Result<Vec<HeldRecord>, String> {
    let label = crate::run::label(kind, waiting);
    let transport = match (kind, kind.transport()) {
        (_, Some(transport)) => transport,
        (EngineKind::Rslock, _) => {
            let mut out = Vec::new();
            for (i, &count) in spec.held.iter().enumerate() {
                let record = HeldRecord::empty(kind, label.clone(), count, spec);
                let tag = format!("{tag}h{i}");
                let record = tokio::select! {
                    r = rslock::run(ctx, nodes, spec, count, &tag, record) => r?,
                    why = ctx.health.lost() => return Err(why),
                };
                if !ctx.quiet {
                    eprintln!("{}", status_line(&record));
                }
                out.push(record);
            }
            return Ok(out);
        }
        (EngineKind::Raw, _) => {
            return Ok(spec
                .held
                .iter()
                .map(|&h| HeldRecord {
                    note: Some(format!("n/a: {} has no watchdog renewal", kind.name())),
                    ..HeldRecord::empty(kind, label.clone(), h, spec)
                })
                .collect())
        }
        // The ceiling (this project's engine always has a transport).
        _ => return Ok(Vec::new()),
    };
    let w = ctx.workload;
    let retry = RetrySpec {
        retries: w.retries,
        delay: w.retry_delay,
        jitter: w.retry_jitter,
    };
    let mut out = Vec::new();
    for (i, &count) in spec.held.iter().enumerate() {
        let engine = build(
            ctx.urls,
            transport,
            retry,
            waiting.unwrap_or(Waiting::Smart),
        )
        .await
        .map_err(|e| format!("{}: {e}", kind.name()))?;
        let run = Held {
            engine,
            nodes,
            spec,
            count,
            tag: format!("{tag}h{i}"),
        };
        let record = tokio::select! {
            r = run.run(HeldRecord::empty(kind, label.clone(), count, spec)) => r?,
            why = ctx.health.lost() => return Err(why),
        };
        if !ctx.quiet {
            eprintln!("{}", status_line(&record));
        }
        out.push(record);
    }
    Ok(out)
}

/// The line printed when a held run ends.
fn status_line(r: &HeldRecord) -> String {
    let opt = |v: Option<f64>| v.map_or_else(|| "n/a".into(), |v| format!("{v:.1}"));
    format!(
        "loadgen: {:<16} held {:<8} acquired {:?}, lost {:?}, renewals/s {}, client {} µs/renewal, server {} µs/renewal, failures {:?}",
        r.label,
        r.held,
        r.acquired,
        r.lost,
        opt(r.renewals_per_s),
        opt(r.client_cpu_us_per_renewal),
        opt(r.server_cpu_us_per_renewal),
        r.failures
    )
}
