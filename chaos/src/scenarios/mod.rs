//! The first ten scenarios, scenario 11 (a majority restart under quarantine),
//! scenarios 12-14 (the multi-resource, read-write and waiting locks under the faults of
//! `mixed_faults`), scenario 15 (renewed locks under load and a `kill -9`), scenarios 16
//! and 17 (a node's wall clock stepped, with the engine's clock guard off and on; scenario
//! 7's restart on nodes with `appendfsync always`), scenarios 18 and 19 (under the faults of
//! `mixed_faults`: the counting and slot semaphores, never more than K holders at once; the fair lock,
//! no waiter overtaken, with an unordered control that must be), scenario 20 (leader election under
//! the leader's kill -9 and SIGSTOP, an empty restart and a clock step), one file each, and the runner that
//! turns a scenario's logs into its summary line and verdict. Shared by all: `findings` (what a
//! scenario returns). Shared by several: `load` (scenario 1's clients, the background of the fault
//! scenarios), `owners` (the choreographed owners A and B of scenarios 7, 16 and 17), `support`,
//! `mixed_faults`, `key_census`.
//!
//! A scenario starts its background clients, plays its fault timeline, stops the clients and returns
//! [`Findings`](findings::Findings): the logs plus its own figures and expectations. The runner adds
//! what every scenario shares: the checker's counts, lost updates from the storage node, the model's
//! expectations (inside Redlock's model: no overlap, no lost update, no torn read, never more than K
//! semaphore holders; scenario 7: an overlap must show), and the leak check. (Scenario 16 is judged
//! inside the model on its guard-on half; its guard-off half, which must show an overlap, runs on
//! processes of its own and is judged by the scenario itself. Scenario 18's control, which must show
//! K+1 holders, is taken out of the logs before the runner sees them; scenario 19's fairness is judged
//! by the scenario. Scenario 20's leaderships are grants to the runner, two valid at once an overlap,
//! and a term going back or shared a failure inside the model; its observers are judged by the
//! scenario.)

mod findings;
mod key_census;
mod load;
mod mixed_faults;
mod owners;
mod s01_contention;
mod s02_kill_nodes;
mod s03_majority_loss;
mod s04_frozen_node;
mod s05_paused_holder;
mod s06_network;
mod s07_restart;
mod s08_stale_owner;
mod s09_script_flush;
mod s10_clock_jump;
mod s11_majority_restart;
mod s12_multi_resource;
mod s13_rwlock;
mod s14_waiting;
mod s15_renewed_under_load;
mod s16_node_clock_jump;
mod s17_durable_restart;
mod s18_semaphore;
mod s19_fair;
mod s20_election;
mod support;

use crate::checker;
use crate::env::{Ctx, Env};
use crate::procs;

/// Whether Redlock's safety argument covers a scenario's faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Inside the model: any overlap or lost update is a bug.
    Inside,
    /// A node restarted without persistence and rejoining at once: outside the model, so the checker
    /// must show the overlap (unless the engine quarantines restarted nodes: `--expect-quarantine`).
    RestartWithoutPersistence,
}

/// One scenario: its number, its name in the summary line, its model.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub number: u8,
    pub name: &'static str,
    pub model: Model,
}

/// Every scenario, in order.
pub const ALL: [Scenario; 20] = [
    scenario(1, "1-no-fault"),
    scenario(2, "2-kill-nodes"),
    scenario(3, "3-majority-loss"),
    scenario(4, "4-frozen-node"),
    scenario(5, "5-paused-holder"),
    scenario(6, "6-network-faults"),
    Scenario {
        number: 7,
        name: "7-restart-without-persistence",
        model: Model::RestartWithoutPersistence,
    },
    scenario(8, "8-stale-owner"),
    scenario(9, "9-script-flush"),
    scenario(10, "10-client-clock-jump"),
    scenario(11, "11-majority-restart-quarantine"),
    scenario(12, "12-multi-resource-faults"),
    scenario(13, "13-rwlock-faults"),
    scenario(14, "14-waiting-handoff-faults"),
    scenario(15, "15-renewed-under-load"),
    scenario(16, s16_node_clock_jump::NAME),
    scenario(17, "17-durable-restart-fsync-always"),
    scenario(18, "18-semaphore-faults"),
    scenario(19, "19-fair-lock-faults"),
    scenario(20, "20-election-faults"),
];

const fn scenario(number: u8, name: &'static str) -> Scenario {
    Scenario {
        number,
        name,
        model: Model::Inside,
    }
}

/// How a scenario ended.
#[derive(Debug)]
pub struct Verdict {
    /// The summary line (`scenario NAME: grants …`).
    pub line: String,
    pub passed: bool,
    pub skipped: bool,
    /// Why it failed, and overlap examples.
    pub notes: Vec<String>,
}

/// Runs one scenario in a task of its own: if it panics, the unwinding drops its [`Env`], which kills
/// every process it started. Then checks that no child process is left.
pub async fn run(ctx: &Ctx, sc: Scenario) -> Verdict {
    let task = tokio::spawn(execute(ctx.clone(), sc));
    let mut verdict = match task.await {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => failed(sc, format!("did not complete: {e}")),
        Err(e) => failed(sc, format!("panicked: {e}")),
    };
    let leftovers = procs::live_children();
    if !leftovers.is_empty() {
        verdict.passed = false;
        verdict.notes.push(format!(
            "processes left after the scenario: {}",
            leftovers.join(", ")
        ));
    }
    verdict
}

fn failed(sc: Scenario, why: String) -> Verdict {
    Verdict {
        line: format!("scenario {}: FAILED ({why})", sc.name),
        passed: false,
        skipped: false,
        notes: Vec::new(),
    }
}

async fn execute(ctx: Ctx, sc: Scenario) -> Result<Verdict, String> {
    if sc.number == 10 {
        if let Err(why) = &ctx.faketime {
            return Ok(Verdict {
                line: format!("scenario {}: skipped ({why})", sc.name),
                passed: true,
                skipped: true,
                notes: Vec::new(),
            });
        }
    }
    if sc.number == 16 {
        if let Err(testkit::clock::ShimError::NoCompiler(why)) = &ctx.clockshim {
            return Ok(Verdict {
                line: format!("scenario {}: skipped ({why})", sc.name),
                passed: true,
                skipped: true,
                notes: Vec::new(),
            });
        }
    }
    let mut env = Env::start(&ctx, sc.name)?;
    if ctx.inject_panic {
        env.spawn_background(2)?;
        support::wait(ctx.phase / 4).await;
        panic!("injected (--inject-panic); the teardown must still stop every process");
    }
    let mut f = match sc.number {
        1 => s01_contention::run(&mut env, &ctx).await?,
        2 => s02_kill_nodes::run(&mut env, &ctx).await?,
        3 => s03_majority_loss::run(&mut env, &ctx).await?,
        4 => s04_frozen_node::run(&mut env, &ctx).await?,
        5 => s05_paused_holder::run(&mut env, &ctx).await?,
        6 => s06_network::run(&mut env, &ctx).await?,
        7 => s07_restart::run(&mut env, &ctx).await?,
        8 => s08_stale_owner::run(&mut env, &ctx).await?,
        9 => s09_script_flush::run(&mut env, &ctx).await?,
        10 => s10_clock_jump::run(&mut env, &ctx).await?,
        11 => s11_majority_restart::run(&mut env, &ctx).await?,
        12 => s12_multi_resource::run(&mut env, &ctx).await?,
        13 => s13_rwlock::run(&mut env, &ctx).await?,
        14 => s14_waiting::run(&mut env, &ctx).await?,
        15 => s15_renewed_under_load::run(&mut env, &ctx).await?,
        16 => s16_node_clock_jump::run(&mut env, &ctx).await?,
        17 => s17_durable_restart::run(&mut env, &ctx).await?,
        18 => s18_semaphore::run(&mut env, &ctx).await?,
        19 => s19_fair::run(&mut env, &ctx).await?,
        20 => s20_election::run(&mut env, &ctx).await?,
        n => return Err(format!("no scenario {n}")),
    };
    let s = checker::summarize(&f.logs);
    let counters = env.counters(&s.completed);
    drop(env); // every node and client of the scenario is gone from here on
    let expected: i64 = s.completed.values().sum();
    let lost = expected - counters.values().sum::<i64>();

    f.expect(s.grants > 0, "no grant at all");
    f.expect(
        s.validity_lies == 0,
        format!(
            "{} grants claimed more validity than TTL - elapsed - drift",
            s.validity_lies
        ),
    );
    f.expect(
        s.expired_at_grant == 0,
        format!("{} locks were returned already expired", s.expired_at_grant),
    );
    match sc.model {
        Model::Inside => {
            f.expect(s.overlaps == 0, "overlap inside the model");
            f.expect(
                s.stale_accepted == 0,
                "the fenced store accepted a stale write inside the model",
            );
            f.expect(lost == 0, "lost update inside the model");
            f.expect(
                s.torn_reads == 0,
                "a read-write lock's holder saw a torn or changing counter inside the model",
            );
            f.expect(
                s.crowding.crowded == 0,
                "more than K holders of a semaphore at once inside the model",
            );
            f.expect(
                s.leaders.terms_back == 0 && s.leaders.shared_terms == 0,
                "a leader's term was not above every earlier leader's inside the model",
            );
        }
        Model::RestartWithoutPersistence if ctx.expect_quarantine => {
            f.expect(
                s.overlaps == 0,
                "overlap although restarted nodes are quarantined",
            );
            f.expect(
                lost == 0,
                "lost update although restarted nodes are quarantined",
            );
        }
        Model::RestartWithoutPersistence => f.expect(
            s.overlaps > 0,
            "no overlap: the checker is blind to the restart fault",
        ),
    }

    let mut line = format!(
        "scenario {}: grants {}, overlaps {}, overruns {}, lost updates {lost}, acquire p99 {:.2} ms, \
         validity lies {}, stale writes accepted {}",
        sc.name,
        s.grants,
        s.overlaps,
        s.overruns,
        checker::ms(s.p99_ns),
        s.validity_lies,
        s.stale_accepted
    );
    if s.fenced_grants > 0 {
        line.push_str(&format!(
            ", stale writes rejected {} (fenced writes accepted {}, token order violations {})",
            s.stale_rejected, s.fenced_accepted, s.token_order_violations
        ));
    }
    if s.checked_reads > 0 {
        line.push_str(&format!(
            ", torn reads {} (of {} checked)",
            s.torn_reads, s.checked_reads
        ));
    }
    if s.crowding.grants > 0 {
        line.push_str(&format!(
            ", holders over K {} (most at once {} of K {}, in {} semaphore grants)",
            s.crowding.crowded, s.crowding.most, s.crowding.most_k, s.crowding.grants
        ));
    }
    if !s.leaders.tenures.is_empty() {
        line.push_str(&format!(
            ", leaderships {} (two valid at once {}, terms going back {}, terms shared {})",
            s.leaders.tenures.len(),
            s.leaders.two_at_once,
            s.leaders.terms_back,
            s.leaders.shared_terms
        ));
    }
    for extra in &f.extras {
        line.push_str(", ");
        line.push_str(extra);
    }
    let mut notes: Vec<String> = f.failures.iter().map(|w| format!("FAILED: {w}")).collect();
    notes.extend(s.overlap_examples.iter().map(|e| format!("overlap: {e}")));
    notes.extend(
        s.crowding
            .examples
            .iter()
            .map(|e| format!("K+1 holders: {e}")),
    );
    notes.extend(s.leaders.examples.iter().map(|e| format!("leaders: {e}")));
    if s.overruns_written > 0 {
        notes.push(format!(
            "{} overruns had written the counter (validity checked just before the write, which then ended late)",
            s.overruns_written
        ));
    }
    let errors = f.logs.errors.iter().take(3);
    notes.extend(errors.map(|e| format!("failed on a valid lock (holder op took_ns error): {e}")));
    Ok(Verdict {
        line,
        passed: f.failures.is_empty(),
        skipped: false,
        notes,
    })
}
