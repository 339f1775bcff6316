//! What a scenario observed beyond the checker's counts: its logs, its own figures and the
//! expectations that did not hold. Every scenario returns one; the runner (`mod.rs`) judges it.

use crate::checker::Logs;

/// What a scenario observed beyond the checker's counts.
#[derive(Debug, Default)]
pub struct Findings {
    pub logs: Logs,
    /// Scenario-specific figures, appended to the summary line.
    pub extras: Vec<String>,
    /// Expectations that did not hold.
    pub failures: Vec<String>,
}

impl Findings {
    /// Findings over `logs`, nothing else yet.
    pub fn new(logs: Logs) -> Self {
        Self {
            logs,
            ..Self::default()
        }
    }

    /// Adds a figure to the summary line.
    pub fn extra(&mut self, figure: impl Into<String>) {
        self.extras.push(figure.into());
    }

    /// Records `what` as a failure unless `ok`.
    pub fn expect(&mut self, ok: bool, what: impl Into<String>) {
        if !ok {
            self.failures.push(what.into());
        }
    }
}
