//! Same-run ratios of redlock against every other engine (and, with `--waiting plain,smart`, of the
//! engine's waiting features against plain backoff), and the performance goals checked against
//! them.

use crate::engines::{EngineKind, Waiting};

use super::record::{Report, RunRecord};

/// `redlock / other` in one scenario. Throughput: above 1 means redlock is faster. Latency: below 1
/// means redlock is faster.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratio {
    /// Scenario id.
    pub scenario: &'static str,
    /// The run on top: `redlock` (its default waiting when both ran), or `redlock-fred` for its own
    /// smart/plain ratio.
    pub ours: String,
    /// The engine redlock is compared with.
    pub versus: EngineKind,
    /// How that run is named: the engine, or `redlock[plain]`.
    pub versus_label: String,
    /// Whether this compares the engine's waiting features with plain backoff (same engine).
    pub waiting: bool,
    /// Whether `versus` is the native ceiling (`ceiling[native]`: `DELIFEQ` release), not the
    /// ceiling's `cycles_per_s`.
    pub native: bool,
    /// redlock fairness ÷ theirs (above 1: fairer).
    pub fairness: Option<f64>,
    /// redlock cycles/s ÷ theirs.
    pub cycles_per_s: Option<f64>,
    /// redlock acquire p50 ÷ theirs.
    pub acquire_p50: Option<f64>,
    /// redlock acquire p99 ÷ theirs.
    pub acquire_p99: Option<f64>,
}

impl Ratio {
    /// `redlock/rslock`, `redlock/redlock[plain]`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.ours, self.versus_label)
    }

    fn of(scenario: &'static str, ours: &RunRecord, theirs: &RunRecord, waiting: bool) -> Self {
        let div = |a: f64, b: f64| (b > 0.0 && a.is_finite()).then(|| a / b);
        let (p_ours, p_theirs) = (ours.acquire_pct(), theirs.acquire_pct());
        let lat = |f: fn(&crate::stats::Percentiles) -> f64| match (&p_ours, &p_theirs) {
            (Some(a), Some(b)) => div(f(a), f(b)),
            _ => None,
        };
        Self {
            scenario,
            ours: ours.label(),
            versus: theirs.engine,
            versus_label: theirs.label(),
            waiting,
            native: false,
            fairness: ours
                .fairness
                .zip(theirs.fairness)
                .and_then(|(a, b)| div(a, b)),
            cycles_per_s: div(ours.cycles_per_s, theirs.cycles_per_s),
            acquire_p50: lat(|p| p.p50),
            acquire_p99: lat(|p| p.p99),
        }
    }
}

/// Every ratio the report supports, scenario by scenario.
pub fn ratios(report: &Report) -> Vec<Ratio> {
    let mut out = Vec::new();
    for scenario in &report.scenarios {
        let Some(ours) = report.find(scenario.id, EngineKind::Redlock) else {
            continue;
        };
        for versus in [
            EngineKind::Rslock,
            EngineKind::Raw,
            EngineKind::RedlockFred,
            EngineKind::Ceiling,
        ] {
            let Some(theirs) = report.find(scenario.id, versus) else {
                continue;
            };
            out.push(Ratio::of(scenario.id, ours, theirs, false));
            if let Some(native) = theirs.ceiling.as_ref().and_then(|c| c.native) {
                out.push(native_ratio(scenario.id, ours, native.cycles_per_s));
            }
        }
    }
    out.extend(waiting_ratios(report));
    out
}

/// `redlock/ceiling[native]`: cycles/s only (the ceiling has no latency or fairness).
fn native_ratio(scenario: &'static str, ours: &RunRecord, native_cycles_per_s: f64) -> Ratio {
    Ratio {
        scenario,
        ours: ours.label(),
        versus: EngineKind::Ceiling,
        versus_label: "ceiling[native]".into(),
        waiting: false,
        native: true,
        fairness: None,
        cycles_per_s: (native_cycles_per_s > 0.0).then(|| ours.cycles_per_s / native_cycles_per_s),
        acquire_p50: None,
        acquire_p99: None,
    }
}

/// `smart / plain` for redlock and redlock-fred, in every scenario that ran both.
pub fn waiting_ratios(report: &Report) -> Vec<Ratio> {
    let mut out = Vec::new();
    for scenario in &report.scenarios {
        for engine in [EngineKind::Redlock, EngineKind::RedlockFred] {
            let smart = report.find_waiting(scenario.id, engine, Waiting::Smart);
            let plain = report.find_waiting(scenario.id, engine, Waiting::Plain);
            if let (Some(smart), Some(plain)) = (smart, plain) {
                out.push(Ratio::of(scenario.id, smart, plain, true));
            }
        }
    }
    out
}

/// One of the project's regression targets: a same-run ratio the maintainers hold each build to.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    /// Scenario id.
    pub scenario: &'static str,
    /// What is compared, e.g. `cycles/s redlock/rslock`.
    pub what: &'static str,
    /// `>=` or `<=`.
    pub op: &'static str,
    /// The target.
    pub target: f64,
    /// The measured value, if the run had what it needs.
    pub measured: Option<f64>,
}

impl Goal {
    /// Whether the goal was met; `None` if it could not be measured.
    pub fn met(&self) -> Option<bool> {
        self.measured.map(|m| {
            if self.op == ">=" {
                m >= self.target
            } else {
                m <= self.target
            }
        })
    }

    /// How a report says it: one run on a busy machine can miss a target by noise alone, so the
    /// word is plain ("missed"), and the heading says to compare medians of several runs.
    pub fn verdict(&self) -> &'static str {
        match self.met() {
            Some(true) => "met",
            Some(false) => "missed",
            None => "not measured",
        }
    }

    /// The goal as a text report's line, `what` in a column `what_width` wide and the measured
    /// value in one `measured_width` wide: `  (s1) cycles/s redlock/rslock >= 2.3   measured 2.41  met`.
    pub fn line(&self, what_width: usize, measured_width: usize) -> String {
        let measured = self
            .measured
            .map_or_else(|| "-".into(), |m| format!("{m:.2}"));
        format!(
            "  ({}) {:<what_width$} {} {:<5} measured {:>measured_width$}  {}",
            self.scenario,
            self.what,
            self.op,
            self.target,
            measured,
            self.verdict()
        )
    }
}

/// The heading of every report's targets.
pub const TARGETS_HEADING: &str =
    "regression targets (same-run ratios; one run on a busy machine can miss one by noise alone: \
     compare the medians of several runs, as results/README.md does)";

/// The regression targets on 5 nodes in the standard scenarios (empty for a custom run).
pub fn goals(report: &Report) -> Vec<Goal> {
    let all = ratios(report);
    let find = |id: &str, versus: EngineKind| {
        all.iter()
            .find(|r| r.scenario == id && r.versus == versus && !r.waiting && !r.native)
    };
    let has = |id: &str| report.scenarios.iter().any(|s| s.id == id);
    let mut out = Vec::new();
    let mut goal = |scenario: &'static str,
                    what: &'static str,
                    op: &'static str,
                    target: f64,
                    measured: Option<f64>| {
        if has(scenario) {
            out.push(Goal {
                scenario,
                what,
                op,
                target,
                measured,
            });
        }
    };
    let rs = |id| find(id, EngineKind::Rslock);
    goal(
        "b",
        "cycles/s redlock/rslock",
        ">=",
        2.3,
        rs("b").and_then(|r| r.cycles_per_s),
    );
    goal(
        "b",
        "cycles/s redlock/ceiling",
        ">=",
        0.8,
        find("b", EngineKind::Ceiling).and_then(|r| r.cycles_per_s),
    );
    goal(
        "a",
        "acquire p50 redlock/rslock",
        "<=",
        0.6,
        rs("a").and_then(|r| r.acquire_p50),
    );
    goal(
        "a",
        "acquire p99 redlock/rslock",
        "<=",
        0.5,
        rs("a").and_then(|r| r.acquire_p99),
    );
    goal(
        "c",
        "cycles/s redlock/rslock",
        ">=",
        3.0,
        rs("c").and_then(|r| r.cycles_per_s),
    );
    goal(
        "c",
        "acquire p99 redlock/rslock",
        "<=",
        0.2,
        rs("c").and_then(|r| r.acquire_p99),
    );
    goal(
        "c",
        "fairness redlock",
        ">=",
        0.9,
        report
            .find("c", EngineKind::Redlock)
            .and_then(|r| r.fairness),
    );
    out
}
