//! Scenario 20: leader election (`redlock.election(name)`) under faults. Three candidate processes
//! campaign for one election on the 5 nodes; the leader does its "work" — every step it checks its
//! leadership is valid and logs its claim (term, when it was granted, `valid_until`) — until it is
//! lost or killed, then campaigns again. Two observer processes follow `observe()`. Every client
//! quarantines restarted nodes (`max_ttl` = the TTL, 1 s), so an empty restart is inside the model.
//!
//! The faults, one pass in `--short` (three in a full run), each a window of the timeline:
//! 1. **leader killed**: `kill -9` of the leader's process (a new candidate process takes its place);
//!    another must be elected within a few TTLs (the failover time is reported);
//! 2. **leader frozen**: SIGSTOP of the (new) leader's process for 2 TTLs, then SIGCONT: another must
//!    be elected while it is frozen, and on waking it must log that it lost its leadership;
//! 3. **node restarted**: node 0 `kill -9`ed and restarted at once, empty (quarantined by every
//!    engine for one `max_ttl`);
//! 4. **clock stepped**: node 2's wall clock stepped forward 10 TTLs under the clock shim, as in
//!    scenario 16 (its keys, the leader's among them, expire at once; the engines' clock guard takes
//!    its vote away). Without `cc` to build the shim this window has no fault, and the line says so;
//! 5. **healed**.
//!
//! Judged ([`crate::leaders`]): never two leaders with valid leaderships at once (tenures count as
//! grants, two at once as overlaps, judged by the runner inside the model), terms strictly
//! increasing across leaders, no term held by two candidates; every observer's items going up in
//! term, naming real leaders, missing no tenure that lasted 300 ms and began a second before the
//! stop, and both observers' terms the same sequence.

use std::time::Duration;

use crate::client::{ClientArgs, LockMode};
use crate::election_log::Step;
use crate::env::{Ctx, Env, TTL_MS};
use crate::leaders::{self, Tenure};
use crate::logs::Logs;

use super::findings::Findings;
use super::mixed_faults::{quarantined, Window};
use super::support::{mark, ms_between, wait};

/// The election's name.
const ELECTION: &str = "lead20";
const CANDIDATES: usize = 3;
const OBSERVERS: usize = 2;
/// The node restarted empty.
const RESTARTED: usize = 0;
/// How far node 2's clock steps: every key it holds expires at once.
const STEP_MS: i64 = 10 * TTL_MS as i64;
/// How long the first leader may take: the fresh nodes' quarantine (1 s) and a campaign.
const FIRST_WITHIN: Duration = Duration::from_secs(10);
/// How long the leader's process stays frozen: past its TTL.
const FROZEN_FOR: Duration = Duration::from_millis(2 * TTL_MS);
/// Observers must have seen every tenure granted this long before the stop.
const SEEN_BEFORE_STOP: Duration = Duration::from_secs(1);

/// The candidates and observers started so far: their ids and process indexes.
struct Cast {
    candidates: Vec<(String, usize)>,
    observers: Vec<String>,
}

impl Cast {
    /// Starts candidate `e{n}`, `n` the number of candidates started so far.
    fn add_candidate(&mut self, env: &mut Env) -> Result<(), String> {
        let id = format!("e{}", self.candidates.len());
        let index = env.spawn(&args(env, &id, LockMode::Elect), &[])?;
        self.candidates.push((id, index));
        Ok(())
    }

    fn process_of(&self, holder: &str) -> Option<usize> {
        self.candidates
            .iter()
            .find(|(id, _)| id == holder)
            .map(|&(_, i)| i)
    }
}

/// A candidate's or an observer's options: the election, quarantined, no counter.
fn args(env: &Env, id: &str, lock: LockMode) -> ClientArgs {
    let mut args = env.client_args(id);
    args.lock = lock;
    args.resources = vec![ELECTION.into()];
    args.storage = None;
    args.tasks = 1;
    quarantined(&mut args);
    args
}

/// What the timeline measured, beside the logs.
#[derive(Default)]
struct Timeline {
    windows: Vec<Window>,
    /// From each kill to the next leader's grant, ms (`None`: none within the bound).
    failovers: Vec<Option<f64>>,
    /// Each freeze: the frozen term, and from the freeze to the next leader's grant, ms (`None`:
    /// none while it was frozen).
    freezes: Vec<(u64, Option<f64>)>,
    /// Faults that could not be played, why.
    skipped: Vec<String>,
}

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    let offset = match &ctx.clockshim {
        Ok(so) => Ok(super::s16_node_clock_jump::put_under_shim(env, so)?),
        Err(e) => Err(e.why().to_string()),
    };
    let mut cast = Cast {
        candidates: Vec::new(),
        observers: (0..OBSERVERS).map(|i| format!("o{i}")).collect(),
    };
    for _ in 0..CANDIDATES {
        cast.add_candidate(env)?;
    }
    for id in cast.observers.clone() {
        env.spawn(&args(env, &id, LockMode::Observe), &[])?;
    }
    let ttl = Duration::from_millis(TTL_MS);
    let mut tl = Timeline::default();
    let start = mark();
    // Candidates killed so far: their last tenure never logs an end.
    let mut killed: Vec<String> = Vec::new();
    let first = leader_now(env, &killed, FIRST_WITHIN).await;
    wait(ctx.phase / 2).await;
    push(&mut tl.windows, "warm", start);
    for _ in 0..super::s18_semaphore::cycles(ctx) {
        if first.is_none() {
            break;
        }
        // 1. The leader's process killed: another candidate must take over.
        let from = mark();
        match leader_now(env, &killed, ttl * 3).await {
            Some(leader) => {
                let index = cast.process_of(&leader.holder).ok_or("an unknown leader")?;
                env.kill_client(index);
                let killed_at = mark();
                killed.push(leader.holder.clone());
                cast.add_candidate(env)?;
                let next = next_leader(env, leader.term, ttl * 3 + Duration::from_secs(2)).await;
                tl.failovers
                    .push(next.map(|t| ms_between(killed_at, t.granted)));
            }
            None => tl.skipped.push("no leader to kill".into()),
        }
        wait(ctx.phase / 2).await;
        push(&mut tl.windows, "leader killed", from);

        // 2. The leader's process frozen past its TTL: another must take over meanwhile.
        let from = mark();
        match leader_now(env, &killed, ttl * 3).await {
            Some(leader) => {
                let index = cast.process_of(&leader.holder).ok_or("an unknown leader")?;
                env.client(index).stop();
                let frozen_at = mark();
                wait(FROZEN_FOR).await;
                let thawed_at = mark();
                env.client(index).cont();
                let next = next_leader(env, leader.term, Duration::ZERO).await;
                // Elected while the leader was frozen (its log is written before the thaw).
                let granted = next.map(|t| t.granted).filter(|&g| g < thawed_at);
                tl.freezes
                    .push((leader.term, granted.map(|g| ms_between(frozen_at, g))));
            }
            None => tl.skipped.push("no leader to freeze".into()),
        }
        wait(ctx.phase / 2).await;
        push(&mut tl.windows, "leader frozen", from);

        // 3. A node killed and restarted at once, empty: quarantined.
        let from = mark();
        env.nodes[RESTARTED].restart();
        wait(ctx.phase.max(ttl + Duration::from_millis(300))).await;
        push(&mut tl.windows, "node restarted", from);

        // 4. A node's clock stepped forward.
        let from = mark();
        match &offset {
            Ok(offset) => offset.step(STEP_MS),
            Err(why) => tl.skipped.push(format!("clock step: {why}")),
        }
        wait(ctx.phase).await;
        push(&mut tl.windows, "clock stepped", from);
    }
    let from = mark();
    wait(ctx.phase / 2).await;
    push(&mut tl.windows, "healed", from);
    let stop = mark();
    let logs = env.finish().await?;
    drop(offset); // the nodes are stopped with the scenario's Env; the shim's file may go
    let mut f = Findings::new(logs);
    f.expect(first.is_some(), "no leader was elected");
    judge(&mut f, &tl, &cast, stop);
    Ok(f)
}

/// Closes a window begun at `from`.
fn push(windows: &mut Vec<Window>, name: &'static str, from: u64) {
    windows.push(Window {
        name,
        from,
        to: mark(),
    });
}

/// The tenures logged so far (the clients are running: a line being written is skipped).
fn tenures(env: &Env) -> Vec<Tenure> {
    Logs::read_dir(&env.dir)
        .map(|logs| leaders::check(&logs.leads).tenures)
        .unwrap_or_default()
}

/// The leader now: the highest term, still held (no lost or resigned line, not a `killed`
/// candidate's), waiting up to `within` for one.
async fn leader_now(env: &Env, killed: &[String], within: Duration) -> Option<Tenure> {
    let until = tokio::time::Instant::now() + within;
    loop {
        let latest = tenures(env).into_iter().max_by_key(|t| t.term);
        if let Some(t) = latest.filter(|t| t.ended.is_none() && !killed.contains(&t.holder)) {
            return Some(t);
        }
        if tokio::time::Instant::now() >= until {
            return None;
        }
        wait(Duration::from_millis(10)).await;
    }
}

/// The first tenure with a term above `term`, waiting up to `within` for one.
async fn next_leader(env: &Env, term: u64, within: Duration) -> Option<Tenure> {
    let until = tokio::time::Instant::now() + within;
    loop {
        let next = tenures(env)
            .into_iter()
            .filter(|t| t.term > term)
            .min_by_key(|t| t.term);
        if next.is_some() || tokio::time::Instant::now() >= until {
            return next;
        }
        wait(Duration::from_millis(10)).await;
    }
}

/// The scenario's figures and expectations (the runner judges the tenures' overlaps and terms).
fn judge(f: &mut Findings, tl: &Timeline, cast: &Cast, stop: u64) {
    let leaders = leaders::check(&f.logs.leads);
    let cutoff = stop - SEEN_BEFORE_STOP.as_nanos() as u64;
    let observers: Vec<&str> = cast.observers.iter().map(String::as_str).collect();
    let seen = leaders::agree(&leaders.tenures, &f.logs.observed, &observers, cutoff, stop);
    let by_window: Vec<String> = tl
        .windows
        .iter()
        .map(|w| {
            let n = leaders
                .tenures
                .iter()
                .filter(|t| (w.from..w.to).contains(&t.granted))
                .count();
            format!("{} {n}", w.name)
        })
        .collect();
    let ms = |v: &Option<f64>| v.map_or_else(|| "none".into(), |v| format!("{v:.0} ms"));
    let failovers: Vec<String> = tl.failovers.iter().map(ms).collect();
    let frozen: Vec<String> = tl
        .freezes
        .iter()
        .map(|(term, next)| {
            let woke = leaders
                .tenures
                .iter()
                .find(|t| t.term == *term)
                .and_then(|t| t.ended.clone());
            let woke = match woke {
                Some(Step::Lost(why)) => format!("logged lost ({why}) on waking"),
                Some(other) => format!("ended {other:?}"),
                None => "logged no loss".into(),
            };
            format!("next leader after {}, the frozen one {woke}", ms(next))
        })
        .collect();
    let delay = |q: f64| crate::checker::percentile(&seen.delays_ns, q) as f64 / 1e6;
    let sequences: Vec<String> = seen
        .sequences
        .iter()
        .map(|(name, terms)| format!("{name} {}", terms.len()))
        .collect();
    f.extra(format!(
        "leaders by window: {}; failover after the leader's kill -9: {} (TTL {TTL_MS} ms); leader \
         frozen {} ms: {}; clock step: {}; observers saw terms: {} (went back {}, phantoms {}, \
         missed {}, same sequence {}), from a grant to an observer p50 {:.1} ms, max {:.1} ms",
        by_window.join(", "),
        failovers.join(", "),
        FROZEN_FOR.as_millis(),
        frozen.join("; "),
        if tl.skipped.iter().any(|s| s.starts_with("clock step")) {
            "skipped (no clock shim)".to_string()
        } else {
            format!("node 2 +{} s", STEP_MS / 1000)
        },
        sequences.join(", "),
        seen.went_back,
        seen.phantoms,
        seen.missed.len(),
        !seen.disagree,
        delay(0.5),
        delay(1.0),
    ));
    for s in tl.skipped.iter().filter(|s| !s.starts_with("clock step")) {
        f.failures.push(format!("fault not played: {s}"));
    }
    f.expect(
        leaders.tenures.len() >= 3,
        format!("only {} leaderships", leaders.tenures.len()),
    );
    f.expect(
        tl.failovers.iter().all(Option::is_some),
        "no new leader after the leader was killed",
    );
    for (term, next) in &tl.freezes {
        f.expect(
            next.is_some(),
            "no new leader while the leader was frozen past its TTL",
        );
        let woke_lost = leaders
            .tenures
            .iter()
            .any(|t| t.term == *term && matches!(t.ended, Some(Step::Lost(_))));
        f.expect(
            woke_lost,
            format!("the frozen leader (term {term}) did not log its loss on waking"),
        );
    }
    if seen.holds() {
        return;
    }
    f.expect(
        seen.went_back == 0,
        "an observer's leaders went back in term",
    );
    f.expect(
        seen.phantoms == 0,
        "an observer saw a leader no candidate was",
    );
    f.expect(
        seen.missed.is_empty(),
        format!(
            "observers missed lasting leaderships: {}",
            seen.missed.join(", ")
        ),
    );
    f.expect(
        !seen.disagree,
        "the observers saw different sequences of terms",
    );
    for e in &seen.examples {
        f.failures.push(format!("observer: {e}"));
    }
}
