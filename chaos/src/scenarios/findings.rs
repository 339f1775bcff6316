//! What a scenario observed beyond the checker's counts: its logs, its own figures and the
//! expectations that did not hold. Every scenario returns one; the runner (`mod.rs`) judges it.

use crate::checker::Logs;
use crate::record::Outcome;

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

    /// The acquire calls that gave up, by how: `contended 3, quorum 0, validity 0, other 1`.
    pub fn gave_up(&self) -> String {
        let by: Vec<String> = [
            Outcome::Contended,
            Outcome::Quorum,
            Outcome::Validity,
            Outcome::Other,
        ]
        .into_iter()
        .map(|o| {
            let n = self.logs.attempts.iter().filter(|a| a.2 == o).count();
            format!("{} {n}", o.code())
        })
        .collect();
        by.join(", ")
    }

    /// Records `what` as a failure unless `ok`.
    pub fn expect(&mut self, ok: bool, what: impl Into<String>) {
        if !ok {
            self.failures.push(what.into());
        }
    }
}
