//! The mutual-exclusion checker: reads every log of a scenario and counts what went wrong.
//!
//! - **overlap**: a grant of a resource that returned before an earlier grant of the same resource
//!   stopped being relied on. A holder relies on its lock from the acquire's return until
//!   `min(valid_until, release start)`: after starting the release it no longer claims the resource.
//! - **overrun**: a critical section that ended after its own `valid_until` (a paused process).
//! - **validity lie**: `valid_until` later than `fp + TTL - drift`, where `fp` is when the acquire's
//!   first poll returned (after an extend: the extend's). The engine's own start, and every SET it
//!   sends, come no earlier, so an honest engine never crosses this bound; one that forgot the elapsed
//!   time or the drift does. (Against the caller's own start the bound would be tighter, but the
//!   caller's start precedes the engine's by however long the thread was preempted in between.)
//! - **expired at grant**: a lock returned with `valid_until` not after the return itself.
//!
//! - **stale writes accepted**: fenced-store writes the store accepted although a write with a higher
//!   token had been accepted before (in the store's own order, the sequence number it returns). It
//!   recomputes the store's check from the logs, independently of the script: always 0 unless the
//!   store is broken. **Stale writes rejected**: writes the store refused — fencing stopping a late
//!   holder.
//! - **token order violations**: a fenced grant whose token is not above the token of every grant of
//!   the same resource that ended (validity end or release start) before this grant's attempt began.
//!   This checks the engine's fencing tokens themselves (the store only sees their effect); reported,
//!   not judged, since counter loss on restarted nodes is the engine's documented assumption.
//!
//! Lost updates need the storage node, so the scenario runner computes them from [`Summary::completed`].

use std::collections::BTreeMap;
use std::path::Path;

use crate::record::{Fenced, Grant, Outcome, Record, Wrote};

/// Slack for converting `Instant`s to raw nanoseconds (the conversion is exact to tens of ns).
const TOLERANCE_NS: u64 = 1_000;

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

/// What the checker found in one scenario's logs.
#[derive(Debug, Default)]
pub struct Summary {
    pub grants: usize,
    pub overlaps: usize,
    /// The first few overlaps, described.
    pub overlap_examples: Vec<String>,
    pub overruns: usize,
    /// Overruns in which the counter was still written (the write was issued while valid).
    pub overruns_written: usize,
    pub validity_lies: usize,
    pub expired_at_grant: usize,
    pub p99_ns: u64,
    /// Completed counter writes per resource: what each counter must read at the end.
    pub completed: BTreeMap<String, i64>,
    /// Grants whose lock was extended (successfully or not).
    pub extends: usize,
    /// Grants that carried a fencing token.
    pub fenced_grants: usize,
    /// Fenced writes accepted by the store.
    pub fenced_accepted: usize,
    /// Accepted fenced writes whose token was lower than one accepted earlier (the store failed).
    pub stale_accepted: usize,
    /// Fenced writes the store rejected.
    pub stale_rejected: usize,
    /// Fenced grants whose token did not exceed that of a grant which ended before they started.
    pub token_order_violations: usize,
}

/// Checks every grant of `logs`.
pub fn summarize(logs: &Logs) -> Summary {
    let mut s = Summary {
        grants: logs.grants.len(),
        ..Summary::default()
    };
    let lat = logs.latencies_within(0, u64::MAX);
    s.p99_ns = percentile(&lat, 0.99);

    let mut by_resource: BTreeMap<&str, Vec<&Grant>> = BTreeMap::new();
    for g in &logs.grants {
        by_resource.entry(&g.resource).or_default().push(g);
        if g.cs_end > g.vu {
            s.overruns += 1;
            if g.wrote == Wrote::Yes {
                s.overruns_written += 1;
            }
        }
        if lies(g) {
            s.validity_lies += 1;
        }
        if g.vu0 <= g.t1 {
            s.expired_at_grant += 1;
        }
        if g.wrote == Wrote::Yes {
            *s.completed.entry(g.resource.clone()).or_default() += 1;
        }
        if g.ext != Outcome::None {
            s.extends += 1;
        }
    }
    let (accepted, stale) = stale_accepted(&logs.grants);
    s.fenced_accepted = accepted;
    s.stale_accepted = stale;
    s.fenced_grants = logs.grants.iter().filter(|g| g.token.is_some()).count();
    s.stale_rejected = logs
        .grants
        .iter()
        .filter(|g| g.fenced == Fenced::Rejected)
        .count();
    s.token_order_violations = by_resource
        .values()
        .map(|grants| token_order_violations(grants))
        .sum();
    for (resource, mut grants) in by_resource {
        grants.sort_by_key(|g| g.t1);
        let mut latest: Option<&Grant> = None;
        for g in grants {
            if let Some(prev) = latest {
                if g.t1 < prev.end() {
                    s.overlaps += 1;
                    if s.overlap_examples.len() < 3 {
                        s.overlap_examples.push(format!(
                            "{resource}: {} was granted while {} still held it ({:.1} ms before its release or validity end)",
                            g.holder,
                            prev.holder,
                            ms(prev.end() - g.t1)
                        ));
                    }
                }
            }
            if latest.is_none_or(|p| g.end() > p.end()) {
                latest = Some(g);
            }
        }
    }
    s
}

/// Accepted fenced writes, and how many of them had a token below one the store accepted before them
/// (per resource, in the store's order).
fn stale_accepted(grants: &[Grant]) -> (usize, usize) {
    let mut by_resource: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
    for g in grants {
        if let (Fenced::Accepted(seq), Some(token)) = (g.fenced, g.token) {
            by_resource
                .entry(&g.resource)
                .or_default()
                .push((seq, token));
        }
    }
    let mut accepted = 0;
    let mut stale = 0;
    for mut writes in by_resource.into_values() {
        writes.sort_unstable();
        accepted += writes.len();
        let mut highest = 0;
        for (_, token) in writes {
            if token < highest {
                stale += 1;
            }
            highest = highest.max(token);
        }
    }
    (accepted, stale)
}

/// Fenced grants (of one resource) whose token is `<=` the largest token of the grants that ended
/// before their attempt started.
fn token_order_violations(grants: &[&Grant]) -> usize {
    let mut fenced: Vec<(&Grant, u64)> =
        grants.iter().filter_map(|g| Some((*g, g.token?))).collect();
    let mut by_end: Vec<(u64, u64)> = fenced.iter().map(|(g, t)| (g.end(), *t)).collect();
    by_end.sort_unstable();
    fenced.sort_by_key(|(g, _)| g.t0);
    let mut ended = by_end.iter().peekable();
    let mut highest = None;
    let mut violations = 0;
    for (g, token) in fenced {
        while let Some(&&(end, t)) = ended.peek() {
            if end + TOLERANCE_NS >= g.t0 {
                break;
            }
            highest = highest.max(Some(t));
            ended.next();
        }
        if highest.is_some_and(|h| token <= h) {
            violations += 1;
        }
    }
    violations
}

/// Whether `g` claims more validity than its own measurements allow.
fn lies(g: &Grant) -> bool {
    let ttl_ns = g.ttl_ms * 1_000_000;
    let bound = |start: u64| (start + ttl_ns).saturating_sub(g.drift_ns) + TOLERANCE_NS;
    let after_extend = g.ext == Outcome::Ok && g.ext_fp > 0;
    g.vu0 > bound(g.fp) || (after_extend && g.vu > bound(g.ext_fp))
}

/// The `p` quantile (0..=1) of sorted values; 0 when empty.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Nanoseconds as milliseconds.
pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(holder: &str, t1: u64, vu: u64, rel_start: u64) -> Grant {
        Grant {
            holder: holder.into(),
            resource: "r".into(),
            ttl_ms: 1,
            drift_ns: 0,
            t0: t1,
            fp: t1,
            t1,
            vu0: vu,
            vu,
            ext_fp: 0,
            cs_start: t1,
            cs_end: t1 + 1,
            rel_start,
            wrote: Wrote::Yes,
            ext: Outcome::None,
            rel: Outcome::Ok,
            token: None,
            fenced: Fenced::None,
        }
    }

    #[test]
    fn an_accepted_write_below_an_earlier_token_is_stale() {
        let mut logs = Logs::default();
        for (seq, token) in [(1, 10), (2, 12), (3, 11), (4, 12)] {
            let mut g = grant("a", seq, 900_000, 0);
            g.token = Some(token);
            g.fenced = Fenced::Accepted(seq);
            logs.grants.push(g);
        }
        let mut g = grant("b", 9, 900_000, 0);
        g.token = Some(5);
        g.fenced = Fenced::Rejected;
        logs.grants.push(g);
        let s = summarize(&logs);
        assert_eq!(
            (s.fenced_accepted, s.stale_accepted, s.stale_rejected),
            (4, 1, 1)
        );
        // Every grant so far was still valid when the others started: no order to check. One that
        // starts after all of them ended, with a token not above 12, is a violation.
        assert_eq!(s.token_order_violations, 0);
        let mut g = grant("c", 2_000_000, 3_000_000, 0);
        g.token = Some(12);
        logs.grants.push(g);
        assert_eq!(summarize(&logs).token_order_violations, 1);
    }

    #[test]
    fn a_grant_after_release_is_no_overlap_but_one_before_is() {
        let mut logs = Logs::default();
        logs.grants.push(grant("a", 100, 900_000, 200));
        logs.grants.push(grant("b", 300, 900_000, 400));
        assert_eq!(summarize(&logs).overlaps, 0);
        logs.grants.push(grant("c", 350, 900_000, 500));
        let s = summarize(&logs);
        assert_eq!(s.overlaps, 1);
        assert!(s.overlap_examples[0].contains("c was granted"));
    }

    #[test]
    fn validity_beyond_ttl_minus_drift_is_a_lie() {
        let mut g = grant("a", 0, 1_000_000, 10);
        assert!(!lies(&g));
        g.vu0 = 1_000_000 + TOLERANCE_NS + 1;
        assert!(lies(&g));
    }

    #[test]
    fn percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.99), 99);
        assert_eq!(percentile(&v, 1.0), 100);
        assert_eq!(percentile(&[], 0.99), 0);
    }
}
