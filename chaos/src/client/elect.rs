//! `chaos client --lock elect` and `--lock observe` (scenario 20): a candidate, or an observer, of
//! the election named by the first of `--resources`, with the election's TTL `--ttl-ms`.
//!
//! A **candidate** campaigns until elected (`wait_forever`, so an outage only delays it), then does
//! the leader's "work": every [`WORK_STEP`] it asks `Leadership::is_valid` and, only if valid, logs
//! its claim — its term, when its campaign returned and its current `valid_until` (an `L` line,
//! [`crate::election_log`]). It leads until its `lost()` resolves (logged with the reason; then it
//! campaigns again) or the run stops (logged, then it resigns). It is a process of its own, so the
//! orchestrator can `kill -9` it or freeze it mid-step.
//!
//! An **observer** follows `observe()` and logs every leader it is given (an `O` line) until the
//! run stops.

use std::sync::Arc;
use std::time::Duration;

use redlock_engine::Leadership;

use crate::clock::mono_ns;
use crate::election_log::{Lead, Observed, Step};

use super::ctx::{Ctx, MAX_ROUNDS};

/// Time between two steps of a leader's work. Each step logs a claim, so a leader killed between
/// two of them relied on its leadership for at most this much less than it held it.
const WORK_STEP: Duration = Duration::from_millis(25);
/// Pause after a campaign that failed (it only does on an error a retry cannot fix: the value
/// could not be published, the engine closed).
const AFTER_FAILURE: Duration = Duration::from_millis(50);

/// The candidate, until the stop.
pub async fn candidate(ctx: Arc<Ctx>) -> Result<(), String> {
    let id = ctx.args.id.clone();
    let election = ctx.redlock.election(&ctx.args.resources[0]).ttl(ctx.ttl);
    for _ in 0..MAX_ROUNDS {
        let won = tokio::select! {
            won = election.campaign(&id).wait_forever() => won,
            () = stopped(&ctx) => break,
        };
        match won {
            Ok(leadership) => {
                if lead(&ctx, &id, leadership).await == Ended::Stopped {
                    break;
                }
            }
            Err(e) => {
                // The .err file: nothing to judge, the orchestrator reads the leaders' claims.
                eprintln!("{id}: campaign failed: {e}");
                tokio::time::sleep(AFTER_FAILURE).await;
            }
        }
    }
    Ok(())
}

/// How a leadership ended for its leader.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// Lost: campaign again.
    Lost,
    /// The run stopped: resigned.
    Stopped,
}

/// The leader's work, from its campaign's return until it loses or the run stops.
async fn lead(ctx: &Ctx, id: &str, leadership: Leadership) -> Ended {
    let t1 = mono_ns();
    let claim = |step: Step, at: u64| {
        let lead = Lead {
            holder: id.to_string(),
            term: leadership.term(),
            t1,
            at,
            vu: ctx.map.to_ns(leadership.valid_until()),
            step,
        };
        ctx.log.write(&lead.line());
    };
    claim(Step::Won, t1);
    loop {
        tokio::select! {
            why = leadership.lost() => {
                claim(Step::lost(&why), mono_ns());
                // Dropped: it resigns in the background.
                return Ended::Lost;
            }
            () = stopped(ctx) => {
                claim(Step::Resigned, mono_ns());
                let _ = leadership.resign().await;
                return Ended::Stopped;
            }
            _ = tokio::time::sleep(WORK_STEP) => {
                if leadership.is_valid() {
                    claim(Step::Work, mono_ns());
                }
            }
        }
    }
}

/// The observer, until the stop.
pub async fn observer(ctx: Arc<Ctx>) -> Result<(), String> {
    let election = ctx.redlock.election(&ctx.args.resources[0]).ttl(ctx.ttl);
    let mut changes = election.observe().map_err(|e| format!("observe: {e}"))?;
    loop {
        tokio::select! {
            leader = changes.next() => {
                let Some(leader) = leader else {
                    return Err("the leader stream ended before the stop".into());
                };
                let seen = Observed {
                    observer: ctx.args.id.clone(),
                    term: leader.term,
                    revision: leader.revision,
                    value: String::from_utf8_lossy(&leader.value).into_owned(),
                    at: mono_ns(),
                };
                ctx.log.write(&seen.line());
            }
            () = stopped(&ctx) => return Ok(()),
        }
    }
}

/// Resolves once the process is told to stop.
async fn stopped(ctx: &Ctx) {
    let mut stop = ctx.stop_signal();
    let _ = stop.wait_for(|s| *s).await;
}
