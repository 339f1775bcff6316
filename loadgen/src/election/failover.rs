//! The failover trials: [`CANDIDATES`] candidate processes campaign for one election and
//! `--observers` observer processes follow it. Each trial lets the leader lead for a random
//! 0.5–1.5 TTL (so the kill falls anywhere between two of its renewals), `kill -9`s its process,
//! waits for another candidate's `elected` line and starts a replacement candidate. Failover is the
//! kill to the new leader's campaign returning; an observer's delay is that return to the
//! observer's item naming the new term (both instants on `CLOCK_MONOTONIC`, which the processes
//! share). A candidate waiting to be elected retries on the engine's pause (50–100 ms by default)
//! while the killed leader's key lives, i.e. until its TTL runs out from its last renewal.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::nodes::health::Health;
use crate::stats::{histogram, Percentiles};

use super::args::{Role, Spec};
use super::cast::{Cast, Event};

/// Candidate processes alive at any time: the leader and two waiting to replace it.
pub const CANDIDATES: usize = 3;
/// How long the processes may take to start, connect and elect the first leader.
const FIRST_WITHIN: Duration = Duration::from_secs(30);
/// How long, beyond the TTL, a failover may take before the run fails.
const FAILOVER_SLACK: Duration = Duration::from_secs(10);

/// One trial.
#[derive(Debug, Clone, Serialize)]
pub struct Trial {
    /// The killed leader's term.
    pub killed_term: u64,
    /// The new leader's term.
    pub term: u64,
    /// How long the killed leader led before the kill, ms.
    pub led_ms: f64,
    /// Kill to the new leader's campaign returning, µs.
    pub failover_us: u64,
    /// Per observer: its item naming the new term, µs after the campaign returned (negative:
    /// before the new leader's process printed its line); `None`: it never named the term.
    pub observer_delay_us: Vec<Option<i64>>,
}

/// What the trials measured.
#[derive(Debug, Clone, Serialize)]
pub struct Failover {
    /// Every trial, in order.
    pub trials: Vec<Trial>,
    /// Failover percentiles, µs.
    pub failover_us: Percentiles,
    /// Observer delay percentiles over every trial and observer, µs (an item earlier than the
    /// campaign's return counts as 0).
    pub observer_delay_us: Percentiles,
    /// Observer items counted.
    pub observer_items: u64,
    /// Observer items that came before the new leader's campaign returned (counted as 0).
    pub observer_early: u64,
    /// (trial, observer) pairs whose observer never named the trial's term.
    pub observer_missed: u64,
    /// Leaderships reported lost by a live leader (none expected).
    pub lost: u64,
}

/// What the parent knows so far.
#[derive(Debug, Default)]
struct State {
    /// Candidates that said `ready` since their last `elected`.
    ready: Vec<bool>,
    /// The current leader: child index, term, when its campaign returned (ns).
    leader: Option<(usize, u64, u64)>,
    /// Per term, per observer child index: when it first named the term (ns).
    seen: BTreeMap<u64, BTreeMap<usize, u64>>,
    lost: u64,
}

impl State {
    fn saw(&self, observer: usize, term: u64) -> bool {
        self.seen
            .get(&term)
            .is_some_and(|s| s.contains_key(&observer))
    }
}

/// The trials, with their children.
struct Trials<'a> {
    cast: Cast,
    state: State,
    health: &'a Health,
}

impl Trials<'_> {
    fn start(&mut self, role: Role) -> Result<(), String> {
        let i = self.cast.spawn(role)?;
        if self.state.ready.len() <= i {
            self.state.ready.resize(i + 1, false);
        }
        Ok(())
    }

    /// Reads the children's lines until `done` holds (true) or `until` passes (false).
    async fn pump(
        &mut self,
        until: Instant,
        done: impl Fn(&State, &Cast) -> bool,
    ) -> Result<bool, String> {
        loop {
            if done(&self.state, &self.cast) {
                return Ok(true);
            }
            tokio::select! {
                ev = self.cast.next() => {
                    let Some((i, ev)) = ev else {
                        return Err("every election process went away".into());
                    };
                    self.on(i, ev).await?;
                }
                why = self.health.lost() => return Err(why),
                _ = tokio::time::sleep_until(until) => return Ok(false),
            }
        }
    }

    async fn on(&mut self, i: usize, ev: Event) -> Result<(), String> {
        let role = self.cast.role(i).name();
        let line = match ev {
            Event::Line(line) => line,
            Event::Closed if self.cast.killed(i) => return Ok(()),
            Event::Closed => {
                let why = self.cast.why(i).await;
                return Err(format!("election {role} {i}: {why}"));
            }
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        let num = |k: usize| -> Result<u64, String> {
            words
                .get(k)
                .and_then(|w| w.parse().ok())
                .ok_or_else(|| format!("election {role} {i}: unreadable line `{line}`"))
        };
        match words.first().copied() {
            Some("ready") => self.state.ready[i] = true,
            Some("elected") => {
                self.state.ready[i] = false;
                self.state.leader = Some((i, num(1)?, num(2)?));
            }
            Some("lost") => self.state.lost += 1,
            Some("seen") => {
                self.state
                    .seen
                    .entry(num(1)?)
                    .or_default()
                    .entry(i)
                    .or_insert(num(3)?);
            }
            _ => return Err(format!("election {role} {i}: unexpected line `{line}`")),
        }
        Ok(())
    }
}

/// Runs `spec.trials` failovers of the election `name` on `urls`.
pub async fn run(
    urls: &[String],
    spec: &Spec,
    name: &str,
    health: &Health,
    quiet: bool,
) -> Result<Failover, String> {
    let mut t = Trials {
        cast: Cast::new(urls, name, spec.ttl)?,
        state: State::default(),
        health,
    };
    for _ in 0..spec.observers {
        t.start(Role::Observer)?;
    }
    for _ in 0..CANDIDATES {
        t.start(Role::Candidate)?;
    }
    // The first leader, named by every observer: everyone is connected and following.
    let first = t
        .pump(Instant::now() + FIRST_WITHIN, |s, c| {
            s.leader
                .is_some_and(|(_, term, _)| c.alive(Role::Observer).all(|o| s.saw(o, term)))
        })
        .await?;
    if !first {
        return Err(format!(
            "no leader elected and observed within {FIRST_WITHIN:?}"
        ));
    }
    let mut trials = Vec::with_capacity(spec.trials);
    let mut elected_at = BTreeMap::new();
    let mut rng = fastrand::Rng::new();
    for n in 0..spec.trials {
        // Every waiting candidate campaigning (a replacement started last trial included).
        let ready = t
            .pump(Instant::now() + FIRST_WITHIN, |s, c| {
                c.alive(Role::Candidate)
                    .filter(|&i| s.leader.is_none_or(|(l, _, _)| l != i))
                    .all(|i| s.ready[i])
            })
            .await?;
        if !ready {
            return Err(format!(
                "trial {}: the candidates did not all campaign within {FIRST_WITHIN:?}",
                n + 1
            ));
        }
        let (leader, old_term, since) = t.state.leader.expect("a leader before every trial");
        // Lead for 0.5-1.5 TTL: the kill lands anywhere between two renewals (every third of the TTL).
        let lead_for = spec.ttl.mul_f64(0.5 + rng.f64());
        t.pump(Instant::now() + lead_for, |_, _| false).await?;
        let killed_at = t.cast.kill(leader);
        let limit = spec.ttl + FAILOVER_SLACK;
        let elected = t
            .pump(Instant::now() + limit, |s, _| {
                s.leader.is_some_and(|(l, _, _)| l != leader)
            })
            .await?;
        if !elected {
            return Err(format!(
                "trial {}: no new leader within {limit:?} of the kill",
                n + 1
            ));
        }
        let (_, term, at) = t.state.leader.expect("elected");
        if term <= old_term {
            return Err(format!(
                "trial {}: the new leader's term {term} is not above {old_term}",
                n + 1
            ));
        }
        elected_at.insert(term, at);
        trials.push(Trial {
            killed_term: old_term,
            term,
            led_ms: killed_at.saturating_sub(since) as f64 / 1e6,
            failover_us: at.saturating_sub(killed_at) / 1_000,
            observer_delay_us: Vec::new(),
        });
        if !quiet {
            eprintln!(
                "loadgen: election trial {:>3}/{}: term {old_term} killed after {:.0} ms, term {term} elected {:.1} ms later",
                n + 1,
                spec.trials,
                killed_at.saturating_sub(since) as f64 / 1e6,
                at.saturating_sub(killed_at) as f64 / 1e6
            );
        }
        t.start(Role::Candidate)?;
    }
    // The last term's items: a TTL is far more than any observer should take.
    let last = trials.last().map(|tr| tr.term);
    t.pump(
        Instant::now() + spec.ttl + Duration::from_secs(1),
        |s, c| last.is_none_or(|term| c.alive(Role::Observer).all(|o| s.saw(o, term))),
    )
    .await?;

    let observers: Vec<usize> = t.cast.alive(Role::Observer).collect();
    let mut fail_h = histogram();
    let mut obs_h = histogram();
    let (mut items, mut early, mut missed) = (0, 0, 0);
    for tr in &mut trials {
        let _ = fail_h.record(tr.failover_us.max(1));
        let at = elected_at[&tr.term];
        for &o in &observers {
            let seen = t.state.seen.get(&tr.term).and_then(|s| s.get(&o)).copied();
            let delay = seen.map(|ns| (ns as i64 - at as i64) / 1_000);
            match delay {
                Some(d) => {
                    items += 1;
                    early += u64::from(d < 0);
                    let _ = obs_h.record(d.max(1) as u64);
                }
                None => missed += 1,
            }
            tr.observer_delay_us.push(delay);
        }
    }
    let lost = t.state.lost;
    t.cast.finish(Duration::from_secs(5)).await;
    Ok(Failover {
        trials,
        failover_us: Percentiles::of(&fail_h),
        observer_delay_us: Percentiles::of(&obs_h),
        observer_items: items,
        observer_early: early,
        observer_missed: missed,
        lost,
    })
}
