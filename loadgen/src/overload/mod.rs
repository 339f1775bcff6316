//! The overload scenarios — past capacity, does the engine report failures that did not
//! happen? Each runs side by side with rslock where it applies, through the engines' public API only.
//!
//! - [`args`]: their options (`--burst`, `--held`, `--hold-for`, …) and validation into a [`args::Spec`].
//! - [`burst`]: B acquires on distinct keys at once; success rate, drain time, goodput vs (b).
//! - [`held`]: H renewed locks held; lost locks, renewals/s, client and server CPU per renewal — on the
//!   redlock engines (their watchdog) and on rslock (a renewal loop per lock around `extend`).
//! - [`cpu`]: getrusage and the servers' `INFO cpu`/`commandstats` counters.
//! - [`report`]: their text table and the `overload` ratios of the JSON document.
//!
//! The third scenario, `overload` (W workers on distinct keys), is an ordinary run of the worker loop
//! ([`crate::run`]) with a scenario from [`args::overload_scenario`]; only its ratio to (b) is here.

pub mod args;
pub mod burst;
pub mod cpu;
pub mod held;
pub mod report;

use crate::engines::{EngineKind, Waiting};
use crate::nodes::addr::NodeUrl;
use crate::run::RunContext;
use crate::workload::Workload;

use args::{Kind, Spec};
use burst::BurstRecord;
use held::HeldRecord;

/// The burst and held records of one invocation (both empty for the other scenarios).
#[derive(Debug, Clone, Default)]
pub struct Records {
    /// Every burst, in run order.
    pub burst: Vec<BurstRecord>,
    /// Every held run, in run order.
    pub held: Vec<HeldRecord>,
}

/// Runs the burst or held part of `spec` on every engine and waiting mode; `b_cycles_per_s` gives an
/// engine's (b) throughput from the same invocation, for the goodput ratio.
pub async fn run(
    spec: &Spec,
    ctx: &RunContext<'_>,
    nodes: &[NodeUrl],
    engines: &[EngineKind],
    waiting: &[Waiting],
    b_cycles_per_s: impl Fn(&str) -> Option<f64>,
) -> Result<Records, String> {
    let mut records = Records::default();
    let mut run_no = 0;
    for &engine in engines {
        for mode in engine.waiting_modes(waiting) {
            run_no += 1;
            let tag = format!("o{run_no:02}");
            match spec.kind {
                Kind::Burst => {
                    for mut r in burst::run(engine, mode, ctx, spec, &tag)
                        .await?
                        .unwrap_or_default()
                    {
                        r.b_cycles_per_s = b_cycles_per_s(&r.label);
                        r.goodput_vs_b = r.b_cycles_per_s.map(|b| r.goodput_per_s / b.max(1e-9));
                        records.burst.push(r);
                    }
                }
                Kind::Held => records
                    .held
                    .extend(held::run(engine, mode, ctx, nodes, spec, &tag).await?),
                Kind::Overload => {}
            }
        }
    }
    Ok(records)
}

/// What the report says about how the overload scenario ran.
pub fn notes(spec: &Spec, w: &Workload) -> Vec<String> {
    match spec.kind {
        Kind::Burst => vec![format!(
            "burst: each acquire is its own tokio task on its own key (no contention: every failure is the engine's); acquire_timeout {:?}, retries {} (enough pauses of at least {:?} to outlast it); rslock gets the same retry count and loadgen cuts its acquire off at acquire_timeout + 5s (it has no deadline of its own); drain = first task started to last task finished; goodput vs (b) = goodput / the same engine's (b) cycles/s in this run",
            spec.acquire_timeout,
            args::burst_retries(spec.acquire_timeout, w.retry_delay),
            w.retry_delay.max(std::time::Duration::from_millis(1)),
        )],
        Kind::Held => vec![format!(
            "held: acquire_renewed(ttl {:?}, RenewPolicy::every({:?})), at most {} acquires in flight; then held {:?} (the measured phase); lost = locks seen lost at any time (is_lost() sampled each second of the hold, and once after acquiring); client CPU = getrusage(RUSAGE_SELF) user+sys over the hold (the spawned servers are child processes, not in it); server CPU = INFO cpu used_cpu_user+used_cpu_sys summed over the nodes; both divided by the renewals counted over the hold; rslock has no watchdog: loadgen renews each of its locks with its own task (sleep every, then LockManager::extend, one attempt), what a user of rslock would write; a failed extend, or one that succeeded after the previous validity ended, counts as lost",
            spec.held_ttl, spec.renew_every, spec.acquire_concurrency, spec.hold_for
        )],
        Kind::Overload => vec![
            "overload: (b) then the overload scenario, the same worker loop and retry policy; ratio = overload cycles/s / (b) cycles/s of the same engine in this run; failures by cause in failed_acquires/failed_releases (QuorumNotReached carries its node causes)".into(),
        ],
    }
}
