//! The fair-lock checker (scenario 19): **no overtaking** of a waiter whose enqueue completed, from
//! the `F` lines ([`crate::fair_log`]) of every process, all on `CLOCK_MONOTONIC`.
//!
//! # What the library promises, and what can be seen of it
//! `kinds::fair`: if A's enqueue completed (its entry landed on a majority) before B began taking its
//! place, B is not granted while A keeps that place; A keeps it until it is granted, gives up (timeout,
//! the future dropped) or its entries are lost (its refreshes did not reach the nodes for a TTL: dead,
//! paused, or cut off). B's enqueue is its first round: each node gives B a ticket above every entry
//! there, A's included, and B's ticket is the highest of a majority's, which meets A's. A's enqueue
//! is complete once a majority holds its entry with its ticket: after its first round, or after the
//! agree round that follows when the nodes gave different tickets. (The fair lock once took its
//! ticket in a round of its own before the enqueue, and its claim held only from that round on; this
//! checker still starts B's place at a bound on B's first round, which is now its enqueue.)
//!
//! The library has no hook for "enqueue done", and this checker needs none: the client taps the
//! tracing event the engine emits for every decided enqueue or attempt round (`redlock round`, with
//! its counts of `G`/`Q`/`L` replies), attributed to the call being polled
//! ([`crate::client::round_tap`]). A round is logged when its event is seen, which is after every
//! reply it counts. From the rounds of one call, with `n` nodes and `q = n/2 + 1`:
//! - **A definite requeue** is a round with `gone > n - q`: as an attempt the library starts over
//!   (`fair_wait`'s rule), and as an enqueue it landed on at most `n - gone < q` nodes, so it starts
//!   over too. After it the call takes a new ticket, so a place begins after that round's time.
//! - **A place completed** by the first round of a segment (the rounds since the last definite
//!   requeue) with `yes + taken >= q`: `G` and `Q` replies both mean the node holds the waiter's entry
//!   with its current ticket (an attempt sets it, never re-adds one; an enqueue round's event counts
//!   only the nodes that gave the waiter its ticket, see `fair_wait`), so that place's enqueue had
//!   completed before the round's time `E`. That is an upper bound on the completion, whichever round
//!   it was. Once a place is complete, only a definite requeue ends it short of a grant or give-up
//!   (an attempt starts over only on `gone > n - q`; an enqueue that landed on a majority never does).
//! - **B's place began** after its last definite-requeue round before the round that granted it, or
//!   after the call's `t0`: a lower bound `S` on its enqueue's start (the rounds of one call run
//!   one after another).
//! - **B was granted** by its call's last round, at `W`: its majority had set the key by then. A
//!   call whose last round did not win (`yes < q`) was granted by the release round of a previous
//!   holder in its own process (`engine::successors`): `W` is then its return, `t1`.
//! - **A's place lasted** at least until `L`: for a granted A, the start of its winning round (`t`
//!   less its duration; it was still waiting then), and no earlier than the round before it (granted
//!   by a release: its last round, or the return of its process's previous grant of the resource
//!   if later — that holder's release, which granted it, came after); for a
//!   timed-out A, `max(last round, t0 + acquire_timeout)`
//!   (the engine gives the place up only once the wait's end has passed, and the wait's end comes at
//!   least `acquire_timeout` after `t0`); for a cancelled one, `max(last round, t1)` (`t1` is taken
//!   before the future is dropped); for any other end, its last round.
//!
//! **Overtake**: A's place (not lost) with `E < S_B` and `W_B < L_A`, A and B different calls on one
//! resource. Every bound errs towards "no overtake", so each one reported is real: A's entry was on a
//! majority before B started its enqueue, and B was granted while A still waited with that
//! place. A place that ended in a definite requeue was lost (the documented limit: its entries expired
//! or were dropped); its overtakes are counted apart, as a figure, not a violation. Calls of one
//! process are waiters like any other (the fair lock has no local queue). **Contested pairs** (A's
//! kept place complete before B began, B begun before A stopped waiting) count the pairs the property
//! constrained: the checker's work, shown in the summary so a run that never queued anyone shows it.
//!
//! What this cannot see: a round the engine decided without emitting its event (an admission refusal
//! emits none; with the default `max_in_flight` and a few tasks it does not happen), hence the
//! `miscounted` check below; and B's enqueue start itself (a round's event comes at its end), which
//! is why `S` bounds it from below.
//!
//! Also counted: **blind** granted calls (no round seen: the tap is broken and this checker with it, a
//! failure), and granted calls whose rounds and `Lock::attempts` disagree (the tap missed rounds).

use crate::fair_log::{FairCall, FairEnd, Round};

/// What the fairness check found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Fairness {
    pub calls: usize,
    pub granted: usize,
    pub timed_out: usize,
    pub cancelled: usize,
    pub failed: usize,
    /// Completed places (enqueues that landed on a majority).
    pub places: usize,
    /// Of those, places their waiter lost (a definite requeue followed).
    pub lost: usize,
    /// Pairs (A's kept place, B's grant) of one resource where B began its place while A waited with
    /// a completed one: each must be served A first. The checker's work, as a figure.
    pub contested: usize,
    /// Places overtaken while kept: violations.
    pub overtakes: usize,
    /// Places overtaken and later lost: the documented limit, not judged.
    pub overtakes_of_lost: usize,
    /// The first few overtakes, described.
    pub examples: Vec<String>,
    /// Granted calls with no round seen.
    pub blind: usize,
    /// Granted calls whose rounds seen differ from `Lock::attempts`.
    pub miscounted: usize,
    /// Longest wait of a granted call (ns), and the mean.
    pub longest_wait_ns: u64,
    pub mean_wait_ns: u64,
}

/// A completed place: its call, when it completed, how long it surely lasted, whether it was lost.
struct Place<'a> {
    call: &'a FairCall,
    completed: u64,
    lasted: u64,
    lost: bool,
}

/// A grant: its call, the bound on its place's start, when it was granted.
struct Win<'a> {
    call: &'a FairCall,
    began: u64,
    granted: u64,
}

/// Checks every fair call.
pub fn check(calls: &[FairCall]) -> Fairness {
    let mut f = Fairness {
        calls: calls.len(),
        ..Fairness::default()
    };
    let (mut places, mut wins) = (Vec::new(), Vec::new());
    let mut waited = 0u64;
    let previous = previous_grants(calls);
    for (call, previous) in calls.iter().zip(previous) {
        match call.end {
            FairEnd::Granted => f.granted += 1,
            FairEnd::TimedOut => f.timed_out += 1,
            FairEnd::Cancelled => f.cancelled += 1,
            FairEnd::Failed => f.failed += 1,
        }
        places_of(call, previous, &mut places);
        if call.end == FairEnd::Granted {
            let wait = call.t1.saturating_sub(call.t0);
            waited += wait;
            f.longest_wait_ns = f.longest_wait_ns.max(wait);
            if call.rounds.is_empty() {
                f.blind += 1;
                continue;
            }
            if call.attempts != Some(call.rounds.len() as u32) {
                f.miscounted += 1;
            }
            wins.push(win_of(call));
        }
    }
    f.mean_wait_ns = waited / f.granted.max(1) as u64;
    f.places = places.len();
    f.lost = places.iter().filter(|p| p.lost).count();
    for p in &places {
        let rivals = wins
            .iter()
            .filter(|w| !std::ptr::eq(w.call, p.call) && w.call.resource == p.call.resource);
        for w in rivals {
            if !p.lost && p.completed < w.began && w.began < p.lasted {
                f.contested += 1;
            }
            if !(p.completed < w.began && w.granted < p.lasted) {
                continue;
            }
            if p.lost {
                f.overtakes_of_lost += 1;
                continue;
            }
            f.overtakes += 1;
            if f.examples.len() < 3 {
                f.examples.push(format!(
                    "{}'s place, complete {:.1} ms before {} began its enqueue, was overtaken: \
                     {} was granted {:.1} ms before {} stopped waiting ({})",
                    p.call.holder,
                    ms(w.began - p.completed),
                    w.call.holder,
                    w.call.holder,
                    ms(p.lasted - w.granted),
                    p.call.holder,
                    describe_end(p.call.end),
                ));
            }
        }
    }
    f
}

/// Whether `r` makes the library start over whatever it was: see the module doc.
fn requeues(r: &Round, n: u32) -> bool {
    r.gone > n - quorum(n)
}

fn quorum(n: u32) -> u32 {
    n / 2 + 1
}

/// Whether `r` granted its call the lock (a majority of `G`), rather than a release round of
/// another task of its process.
fn won(r: &Round, n: u32) -> bool {
    r.yes >= quorum(n)
}

/// The completed places of `call`, one per segment between definite requeues that has a round with
/// `yes + taken >= q`.
fn places_of<'a>(call: &'a FairCall, previous: u64, out: &mut Vec<Place<'a>>) {
    let n = call.nodes;
    let mut completed = None;
    for (i, r) in call.rounds.iter().enumerate() {
        if completed.is_none() && r.yes + r.taken >= quorum(n) {
            completed = Some(r.t);
        }
        if requeues(r, n) {
            if let Some(at) = completed.take() {
                out.push(Place {
                    call,
                    completed: at,
                    lasted: r.t,
                    lost: true,
                });
            }
            continue;
        }
        if i + 1 == call.rounds.len() {
            if let Some(at) = completed {
                out.push(Place {
                    call,
                    completed: at,
                    lasted: lasted(call, previous),
                    lost: false,
                });
            }
        }
    }
}

/// For each call, the return of the latest granted call of its process on its resource that
/// returned before it (0 if none): for a call granted by a release, that holder's release came
/// after this, and the call still waited.
fn previous_grants(calls: &[FairCall]) -> Vec<u64> {
    let process = |c: &FairCall| c.holder.split('.').next().unwrap_or_default().to_string();
    let mut granted: std::collections::BTreeMap<(String, &str), Vec<u64>> = Default::default();
    for c in calls.iter().filter(|c| c.end == FairEnd::Granted) {
        granted
            .entry((process(c), &c.resource))
            .or_default()
            .push(c.t1);
    }
    for list in granted.values_mut() {
        list.sort_unstable();
    }
    calls
        .iter()
        .map(|c| {
            let Some(list) = granted.get(&(process(c), c.resource.as_str())) else {
                return 0;
            };
            let before = list.partition_point(|&t| t < c.t1);
            before.checked_sub(1).map_or(0, |i| list[i])
        })
        .collect()
}

/// The bound `L` of the module doc for the call's last place (`previous`: see [`previous_grants`]).
fn lasted(call: &FairCall, previous: u64) -> u64 {
    let last = call.rounds.last().map_or(call.t0, |r| r.t);
    match call.end {
        FairEnd::Granted => match &call.rounds[..] {
            [] => call.t0,
            [.., last] if !won(last, call.nodes) => last.t.max(previous),
            [won] => won.t.saturating_sub(won.took).max(call.t0),
            [.., before, won] => won.t.saturating_sub(won.took).max(before.t),
        },
        FairEnd::TimedOut => last.max(call.t0 + call.timeout_ms * 1_000_000),
        FairEnd::Cancelled => last.max(call.t1),
        FairEnd::Failed => last,
    }
}

/// A granted call's place start bound `S` and grant time `W`.
fn win_of(call: &FairCall) -> Win<'_> {
    let (granted, before) = match call.rounds.split_last() {
        Some((last, before)) if won(last, call.nodes) => (last.t, before),
        _ => (call.t1, &call.rounds[..]),
    };
    let began = before
        .iter()
        .rev()
        .find(|r| requeues(r, call.nodes))
        .map_or(call.t0, |r| r.t);
    Win {
        call,
        began,
        granted,
    }
}

fn describe_end(end: FairEnd) -> &'static str {
    match end {
        FairEnd::Granted => "it was granted later",
        FairEnd::TimedOut => "it timed out later",
        FairEnd::Cancelled => "it was cancelled later",
        FairEnd::Failed => "it failed later",
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[cfg(test)]
#[path = "fairness_tests.rs"]
mod tests;
