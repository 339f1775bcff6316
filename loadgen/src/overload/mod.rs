//! The overload scenarios of issue 14 — past capacity, does the engine report failures that did not
//! happen? Each runs side by side with rslock where it applies, through the engines' public API only.
//!
//! - [`args`]: their options (`--burst`, `--held`, `--hold-for`, …) and validation into a [`args::Spec`].
//! - [`burst`]: B acquires on distinct keys at once; success rate, drain time, goodput vs (b).
//! - [`held`]: H renewed locks held; lost locks, renewals/s, client and server CPU per renewal.
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
        let modes: Vec<Option<Waiting>> = if engine.has_waiting() {
            waiting.iter().copied().map(Some).collect()
        } else {
            vec![None]
        };
        for mode in modes {
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
