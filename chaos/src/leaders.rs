//! The election checker (scenario 20): **never two valid leaders at once, terms strictly increasing
//! across leaders, and observers that agree** — what `redlock.election(name)` promises (see the
//! library's `api/election` module doc), read off the `L` and `O` lines ([`crate::election_log`]).
//!
//! - A **tenure** is one term's leadership: granted when its campaign returned (`t1`), relied on
//!   until the latest `valid_until` its leader logged — or, if the leader logged that it lost or
//!   resigned before then, until that moment. A leader killed with `kill -9` relied on it no further
//!   than the last `valid_until` it logged; a leader frozen past its validity logs `lost` on waking
//!   and never a work step with a `valid_until` in the past (each step checks `is_valid` first).
//! - **Two at once**: a tenure granted before an earlier one (by grant time) ended — two leaders
//!   relying on valid leaderships at one instant. A tenure ending exactly as the next is granted is
//!   a hand-over, not two at once (as in the overlap check).
//! - **Terms back**: a tenure whose term is not above every earlier tenure's.
//! - **Shared terms**: one term granted by two campaigns (two candidates, or one candidate twice):
//!   two leaderships with one fencing token.
//!
//! [`check`] needs the leaders' lines only, so the runner judges it for every scenario with its
//! counts ([`crate::checker::summarize`]: tenures count as grants, two at once as overlaps).
//! [`agree`] judges the observers, which needs the scenario's stop: every observer's items must go
//! up in `(term, revision)`, name a term some candidate held with that candidate's value, include
//! every tenure that lasted [`LASTING_NS`] and began before the cut-off, and the observers' terms up
//! to the cut-off must be the same sequence. (`observe()` may miss a leadership that begins and ends
//! between two of its reads; a tenure of a few hundred ms is read many times over.)

use std::collections::BTreeMap;

use crate::election_log::{Lead, Observed, Step};

/// A tenure this long must have been seen by every observer.
pub const LASTING_NS: u64 = 300_000_000;

/// One term's leadership, as its leader logged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenure {
    pub term: u64,
    pub holder: String,
    /// When its campaign returned.
    pub granted: u64,
    /// When its leader stopped relying on it (see the module doc).
    pub end: u64,
    /// How it ended, if its leader said (`None`: killed, or still held when the logs were read).
    pub ended: Option<Step>,
}

/// What [`check`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Leaders {
    /// Every tenure, by grant time.
    pub tenures: Vec<Tenure>,
    pub two_at_once: usize,
    pub terms_back: usize,
    pub shared_terms: usize,
    /// The first few of each, described.
    pub examples: Vec<String>,
}

/// How many examples a report keeps.
const EXAMPLES: usize = 3;

/// Builds the tenures from `leads` and checks them (see the module doc).
pub fn check(leads: &[Lead]) -> Leaders {
    // One tenure per campaign won: its term and the moment its campaign returned. By term alone, a
    // term granted twice (to two candidates, or to one that lost and campaigned again) would merge
    // into one tenure and hide the second grant.
    let mut by_grant: BTreeMap<(u64, u64), Vec<&Lead>> = BTreeMap::new();
    for lead in leads {
        by_grant.entry((lead.term, lead.t1)).or_default().push(lead);
    }
    let mut out = Leaders::default();
    let mut grants_of_term: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    for ((term, granted), lines) in by_grant {
        let holder = &lines[0].holder;
        grants_of_term.entry(term).or_default().push(holder);
        let valid_until = lines.iter().map(|l| l.vu).max().unwrap_or(0);
        let last = lines.iter().filter(|l| l.step.ends()).min_by_key(|l| l.at);
        out.tenures.push(Tenure {
            term,
            holder: holder.clone(),
            granted,
            end: last.map_or(valid_until, |l| l.at.min(valid_until)),
            ended: last.map(|l| l.step.clone()),
        });
    }
    for (term, holders) in grants_of_term.iter().filter(|(_, h)| h.len() > 1) {
        out.shared_terms += 1;
        if out.examples.len() < EXAMPLES {
            out.examples.push(format!(
                "term {term} was granted {} times (to {})",
                holders.len(),
                holders.join(", ")
            ));
        }
    }
    out.tenures.sort_by_key(|t| (t.granted, t.term));
    // The tenure held longest so far, and the highest term so far.
    let mut latest: Option<&Tenure> = None;
    let mut highest: Option<&Tenure> = None;
    for t in &out.tenures {
        if let Some(prev) = latest.filter(|p| t.granted < p.end) {
            out.two_at_once += 1;
            if out.examples.len() < EXAMPLES {
                out.examples.push(format!(
                    "term {} ({}) was granted while term {} ({}) was still valid ({:.1} ms before \
                     its end)",
                    t.term,
                    t.holder,
                    prev.term,
                    prev.holder,
                    (prev.end - t.granted) as f64 / 1e6
                ));
            }
        }
        if let Some(prev) = highest.filter(|p| t.term <= p.term) {
            out.terms_back += 1;
            if out.examples.len() < EXAMPLES {
                out.examples.push(format!(
                    "term {} ({}) was granted after term {} ({})",
                    t.term, t.holder, prev.term, prev.holder
                ));
            }
        }
        if latest.is_none_or(|p| t.end > p.end) {
            latest = Some(t);
        }
        if highest.is_none_or(|p| t.term > p.term) {
            highest = Some(t);
        }
    }
    out
}

/// What [`agree`] found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Agreement {
    /// Each observer's terms in the order it saw them (each term once).
    pub sequences: Vec<(String, Vec<u64>)>,
    /// Items not above the same observer's previous `(term, revision)`.
    pub went_back: usize,
    /// Items naming a term no candidate held, or with another candidate's value.
    pub phantoms: usize,
    /// `observer: term` of each lasting tenure an observer did not see.
    pub missed: Vec<String>,
    /// Whether the observers' sequences up to the cut-off differ.
    pub disagree: bool,
    /// From a tenure's grant to each observer's first item of it, ns (0 when the item came first:
    /// the leader publishes before its campaign returns), sorted.
    pub delays_ns: Vec<u64>,
    /// The first few problems, described.
    pub examples: Vec<String>,
}

impl Agreement {
    /// Whether every observer rule held.
    pub fn holds(&self) -> bool {
        self.went_back == 0 && self.phantoms == 0 && self.missed.is_empty() && !self.disagree
    }
}

/// Checks what the `observers` saw against the `tenures` ([`check`]'s), for tenures granted before
/// `cutoff` (raw ns; later ones may not have been read before the observers stopped). A term nobody
/// logged that an observer saw at or after `stop` (the stop file's time) is not a phantom: the stop
/// cancels a candidate's campaign, which may have won on the nodes (and been seen, and resigned on
/// drop) before its future was dropped and its win logged.
pub fn agree(
    tenures: &[Tenure],
    observed: &[Observed],
    observers: &[&str],
    cutoff: u64,
    stop: u64,
) -> Agreement {
    let mut out = Agreement::default();
    let by_term: BTreeMap<u64, &Tenure> = tenures.iter().map(|t| (t.term, t)).collect();
    let note = |out: &mut Agreement, what: String| {
        if out.examples.len() < EXAMPLES {
            out.examples.push(what);
        }
    };
    for &name in observers {
        let mut items: Vec<&Observed> = observed.iter().filter(|o| o.observer == name).collect();
        items.sort_by_key(|o| o.at);
        let mut last: Option<(u64, u64)> = None;
        let mut terms: Vec<u64> = Vec::new();
        for item in items {
            let order = (item.term, item.revision);
            if last.is_some_and(|l| order <= l) {
                out.went_back += 1;
                note(&mut out, format!("{name} saw {order:?} after {last:?}"));
            }
            last = Some(last.map_or(order, |l| l.max(order)));
            match by_term.get(&item.term) {
                Some(t) if t.holder == item.value => {
                    if !terms.contains(&item.term) {
                        terms.push(item.term);
                        out.delays_ns.push(item.at.saturating_sub(t.granted));
                    }
                }
                None if item.at >= stop => {}
                held => {
                    out.phantoms += 1;
                    let by = held.map_or("nobody".to_string(), |t| t.holder.clone());
                    note(
                        &mut out,
                        format!(
                            "{name} saw term {} led by {}, held by {by}",
                            item.term, item.value
                        ),
                    );
                }
            }
        }
        for t in tenures {
            let lasting = t.end.saturating_sub(t.granted) >= LASTING_NS;
            if lasting && t.granted < cutoff && !terms.contains(&t.term) {
                out.missed.push(format!("{name}: {}", t.term));
            }
        }
        out.sequences.push((name.to_string(), terms));
    }
    let before_cutoff = |terms: &[u64]| -> Vec<u64> {
        terms
            .iter()
            .copied()
            .filter(|term| by_term.get(term).is_some_and(|t| t.granted < cutoff))
            .collect()
    };
    let first = out.sequences.first().map(|(_, s)| before_cutoff(s));
    out.disagree = out
        .sequences
        .iter()
        .any(|(_, s)| Some(before_cutoff(s)) != first);
    out.delays_ns.sort_unstable();
    out
}

#[cfg(test)]
#[path = "leaders_tests.rs"]
mod tests;
