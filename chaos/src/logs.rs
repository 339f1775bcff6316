//! [`Logs`]: every record of one scenario, read back from its clients' log files (one per process,
//! all times on `CLOCK_MONOTONIC`), for the checkers and the scenarios' own figures.

use std::path::Path;

use crate::election_log::{Lead, Observed};
use crate::fair_log::FairCall;
use crate::record::{Grant, Outcome, Record};
use crate::renewal_log::Renewal;

/// Every record of one scenario.
#[derive(Debug, Default)]
pub struct Logs {
    pub grants: Vec<Grant>,
    /// `(t0, t1, outcome)` of every acquire attempt.
    pub attempts: Vec<(u64, u64, Outcome)>,
    /// `(log file stem, wall_ns, mono_ns)` samples.
    pub walls: Vec<(String, i64, u64)>,
    /// Failed release/extend calls on valid locks: `holder op took_ns message`.
    pub errors: Vec<String>,
    /// Renewed locks' holds (scenario 15).
    pub renewals: Vec<Renewal>,
    /// Fair acquire calls (scenario 19).
    pub fair: Vec<FairCall>,
    /// Leaders' claims (scenario 20).
    pub leads: Vec<Lead>,
    /// Leaders as observers saw them (scenario 20).
    pub observed: Vec<Observed>,
}

impl Logs {
    /// Reads every `*.log` file in `dir`, skipping malformed lines.
    pub fn read_dir(dir: &Path) -> std::io::Result<Self> {
        let mut logs = Self::default();
        let mut paths: Vec<_> = std::fs::read_dir(dir)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        paths.sort();
        for path in paths {
            logs.read_file(&path)?;
        }
        Ok(logs)
    }

    /// Adds the records of one log file.
    pub fn read_file(&mut self, path: &Path) -> std::io::Result<()> {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(path)?;
        self.add(&stem, &text);
        Ok(())
    }

    fn add(&mut self, stem: &str, text: &str) {
        for line in text.lines() {
            let kept = keep(&mut self.renewals, Renewal::parse(line))
                || keep(&mut self.fair, FairCall::parse(line))
                || keep(&mut self.leads, Lead::parse(line))
                || keep(&mut self.observed, Observed::parse(line));
            if kept {
                continue;
            }
            match Record::parse(line) {
                Some(Record::Grant(g)) => self.grants.push(g),
                Some(Record::Attempt { t0, t1, outcome }) => self.attempts.push((t0, t1, outcome)),
                Some(Record::Begin { .. }) => {} // read live by scenario 5, not needed here
                Some(Record::Wall { wall_ns, mono_ns }) => {
                    self.walls.push((stem.to_string(), wall_ns, mono_ns))
                }
                Some(Record::Error(e)) => self.errors.push(e),
                None => {}
            }
        }
    }

    /// When the first of the grants `which` picks returned (raw ns), if any: when the service came back
    /// after a fault, as the scenarios that kill nodes measure it.
    pub fn first_return(&self, which: impl Fn(&Grant) -> bool) -> Option<u64> {
        self.grants.iter().filter(|g| which(g)).map(|g| g.t1).min()
    }

    /// Grants whose attempt started after `from` and returned before `to`.
    pub fn grants_within(&self, from: u64, to: u64) -> impl Iterator<Item = &Grant> {
        self.grants.iter().filter(move |g| g.t0 > from && g.t1 < to)
    }

    /// Latencies (ns) of attempts that started in `[from, to)`, sorted.
    pub fn latencies_within(&self, from: u64, to: u64) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .attempts
            .iter()
            .filter(|(t0, _, _)| (from..to).contains(t0))
            .map(|(t0, t1, _)| t1.saturating_sub(*t0))
            .collect();
        v.sort_unstable();
        v
    }
}

/// Pushes `parsed` onto `records` if a line parsed as that kind of record: whether it did, so that
/// [`Logs::add`] tries each kind in turn until one takes the line.
fn keep<T>(records: &mut Vec<T>, parsed: Option<T>) -> bool {
    let found = parsed.is_some();
    records.extend(parsed);
    found
}
