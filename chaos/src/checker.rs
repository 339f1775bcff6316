//! The mutual-exclusion checker: reads every log of a scenario and counts what went wrong.
//!
//! - **overlap**: a grant of a resource that returned before an earlier grant of the same resource
//!   stopped being relied on. A holder relies on its lock from the acquire's return until
//!   `min(valid_until, release start)`: after starting the release it no longer claims the resource.
//!   A multi-resource grant holds each of its resources, so it is checked on each. Two reader grants
//!   of a read-write lock may overlap; a reader and a writer, or any other two grants, may not. Tasks
//!   of one process are holders like any other (a local hand-off must not overlap either).
//! - **overrun**: a critical section that ended after its own `valid_until` (a paused process).
//! - **validity lie**: `valid_until` later than `fp + TTL - drift`, where `fp` is when the acquire's
//!   first poll returned (after an extend: the extend's). The engine's own start, and every SET it
//!   sends, come no earlier, so an honest engine never crosses this bound; one that forgot the elapsed
//!   time or the drift does. (Against the caller's own start the bound would be tighter, but the
//!   caller's start precedes the engine's by however long the thread was preempted in between.)
//!   For a waiting acquire `fp` is the end of its last poll but one (see [`crate::clock::with_polls`]).
//!   A lock **handed over** by a local holder was measured by an earlier grant: it may claim up to
//!   the `valid_until` that holder released it with (the grant of the same process and resource whose
//!   release started last before this one returned), or more only through an extend on take-over,
//!   whose start precedes `fp`.
//! - **expired at grant**: a lock returned with `valid_until` not after the return itself.
//! - **torn reads**: a read-write lock's holder saw the counter and its mirror differ, or (a reader)
//!   saw them change under its lock, while the lock was still valid (see [`crate::client::section`]).
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
//! - **crowded**: a semaphore grant (permit or slot) that returned while K others still held: K+1
//!   holders at once ([`crate::crowding`]; semaphore holds share among themselves in the overlap
//!   check, never with an exclusive hold).
//!
//! - **leaders** (scenario 20): one term's leadership is a grant of the election's lock, so its
//!   tenures count as grants and two valid leaders at once as overlaps ([`crate::leaders`], which
//!   also counts terms going back and terms shared by two leaders).
//!
//! Lost updates need the storage node, so the scenario runner computes them from [`Summary::completed`].

use std::collections::BTreeMap;

pub use crate::logs::Logs;
use crate::record::{Fenced, Grant, LockKind, Outcome, Seen, Via, Wrote};

/// Slack for converting `Instant`s to raw nanoseconds (the conversion is exact to tens of ns).
const TOLERANCE_NS: u64 = 1_000;

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
    /// Grants whose holder checked the counter against its mirror (read-write locks).
    pub checked_reads: usize,
    /// Of those, the ones that saw a torn or changing pair under a valid lock.
    pub torn_reads: usize,
    /// Grants handed over by a local holder (with or without an extend on take-over).
    pub handoffs: usize,
    /// Semaphore grants against their K ([`crate::crowding`]).
    pub crowding: crate::crowding::Crowding,
    /// Leaders' tenures ([`crate::leaders`]): counted in `grants`, two at once in `overlaps`.
    pub leaders: crate::leaders::Leaders,
}

/// Checks every grant of `logs`.
pub fn summarize(logs: &Logs) -> Summary {
    let mut s = Summary {
        grants: logs.grants.len(),
        ..Summary::default()
    };
    let lat = logs.latencies_within(0, u64::MAX);
    s.p99_ns = percentile(&lat, 0.99);

    let handed = handed_over_until(&logs.grants);
    let granted_by = released_during(&logs.grants);
    let mut by_resource: BTreeMap<&str, Vec<&Grant>> = BTreeMap::new();
    for ((g, handed_until), granted_by) in logs.grants.iter().zip(handed).zip(granted_by) {
        for r in g.resources() {
            by_resource.entry(r).or_default().push(g);
        }
        if g.cs_end > g.vu {
            s.overruns += 1;
            if g.wrote == Wrote::Yes {
                s.overruns_written += 1;
            }
        }
        if lies(g, handed_until.or(granted_by)) {
            s.validity_lies += 1;
        }
        if g.vu0 <= g.t1 {
            s.expired_at_grant += 1;
        }
        if g.wrote == Wrote::Yes {
            for r in g.resources() {
                *s.completed.entry(r.to_string()).or_default() += 1;
            }
        }
        if g.ext != Outcome::None {
            s.extends += 1;
        }
        match g.seen {
            Seen::Clean => s.checked_reads += 1,
            Seen::Torn => {
                s.checked_reads += 1;
                s.torn_reads += 1;
            }
            Seen::None | Seen::Late => {}
        }
        if matches!(g.via, Via::Handoff | Via::HandoffExtended) {
            s.handoffs += 1;
        }
    }
    s.crowding = crate::crowding::check(&logs.grants);
    s.leaders = crate::leaders::check(&logs.leads);
    s.grants += s.leaders.tenures.len();
    s.overlaps += s.leaders.two_at_once;
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
    for (resource, grants) in by_resource {
        for (g, prev) in overlaps(grants) {
            s.overlaps += 1;
            if s.overlap_examples.len() < 3 {
                let same = if g.process() == prev.process() {
                    "; same process"
                } else {
                    ""
                };
                s.overlap_examples.push(format!(
                    "{resource}: {} was granted while {} still held it ({:.1} ms before its release or validity end{same})",
                    describe(g),
                    describe(prev),
                    ms(prev.end() - g.t1),
                ));
            }
        }
    }
    s
}

/// The overlaps among the grants of one resource: each grant that returned while an earlier one (by
/// return time) still held it, paired with that earlier one. Readers may share: a reader conflicts
/// only with a non-reader, any other grant with every grant.
fn overlaps(mut grants: Vec<&Grant>) -> Vec<(&Grant, &Grant)> {
    grants.sort_by_key(|g| g.t1);
    // Among the grants so far, the one held longest, and the one held longest that excludes others.
    let mut latest: Option<&Grant> = None;
    let mut latest_exclusive: Option<&Grant> = None;
    let mut found = Vec::new();
    for g in grants {
        let rival = if g.kind.shared() {
            latest_exclusive
        } else {
            latest
        };
        if let Some(prev) = rival.filter(|p| g.t1 < p.end()) {
            found.push((g, prev));
        }
        if latest.is_none_or(|p| g.end() > p.end()) {
            latest = Some(g);
        }
        if !g.kind.shared() && latest_exclusive.is_none_or(|p| g.end() > p.end()) {
            latest_exclusive = Some(g);
        }
    }
    found
}

/// A holder for an overlap report: `c1.2`, with the lock kind unless plain exclusive.
fn describe(g: &Grant) -> String {
    match g.kind {
        LockKind::Exclusive => g.holder.clone(),
        LockKind::Many => format!("{} (holding {})", g.holder, g.resource),
        LockKind::Read => format!("{} (reader)", g.holder),
        LockKind::Write => format!("{} (writer)", g.holder),
        LockKind::Permit(k) | LockKind::Slot(k) => format!("{} (one of {k})", g.holder),
    }
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

/// For each grant, if it was handed over, the `valid_until` its previous local holder ended with: the
/// grant of the same process and resource whose release started last before it returned.
fn handed_over_until(grants: &[Grant]) -> Vec<Option<u64>> {
    let mut released: BTreeMap<(&str, &str), Vec<(u64, u64)>> = BTreeMap::new();
    for g in grants.iter().filter(|g| g.rel_start > 0) {
        let key = (g.process(), g.resource.as_str());
        released.entry(key).or_default().push((g.rel_start, g.vu));
    }
    for list in released.values_mut() {
        list.sort_unstable();
    }
    grants
        .iter()
        .map(|g| {
            if !matches!(g.via, Via::Handoff | Via::HandoffExtended) {
                return None;
            }
            let list = released.get(&(g.process(), g.resource.as_str()))?;
            let before = list.partition_point(|&(rel, _)| rel < g.t1);
            list.get(before.checked_sub(1)?).map(|&(_, vu)| vu)
        })
        .collect()
}

/// For each fair-lock grant (`Via::Queue`), the validity a release round of its own process's
/// previous holder of the resource could give it, if one started during its call: that round may
/// have granted it (`engine::successors`), counting from its start, which precedes the release's
/// last poll but one (`rel_fp`).
fn released_during(grants: &[Grant]) -> Vec<Option<u64>> {
    let mut released: BTreeMap<(&str, &str), Vec<(u64, u64)>> = BTreeMap::new();
    for g in grants.iter().filter(|g| g.rel_fp > 0) {
        let key = (g.process(), g.resource.as_str());
        released
            .entry(key)
            .or_default()
            .push((g.rel_start, g.rel_fp));
    }
    for list in released.values_mut() {
        list.sort_unstable();
    }
    grants
        .iter()
        .map(|g| {
            if !matches!(g.via, Via::Queue(_)) {
                return None;
            }
            let list = released.get(&(g.process(), g.resource.as_str()))?;
            let before = list.partition_point(|&(rel, _)| rel < g.t1);
            let &(rel, fp) = list.get(before.checked_sub(1)?)?;
            let ttl_ns = g.ttl_ms * 1_000_000;
            (rel >= g.t0).then(|| (fp + ttl_ns).saturating_sub(g.drift_ns))
        })
        .collect()
}

/// Whether `g` claims more validity than its own measurements allow; `handed_until`: the validity its
/// previous local holder released it with, if it was handed over.
fn lies(g: &Grant, handed_until: Option<u64>) -> bool {
    let ttl_ns = g.ttl_ms * 1_000_000;
    let bound = |start: u64| (start + ttl_ns).saturating_sub(g.drift_ns) + TOLERANCE_NS;
    let at_grant = bound(g.fp).max(handed_until.map_or(0, |u| u + TOLERANCE_NS));
    let after_extend = g.ext == Outcome::Ok && g.ext_fp > 0;
    g.vu0 > at_grant || (after_extend && g.vu > bound(g.ext_fp))
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
#[path = "checker_tests.rs"]
mod tests;
