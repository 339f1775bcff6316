//! Scenario 19: the fair lock (`acquire_fair`) under the faults of [`super::mixed_faults`] — a node
//! `kill -9`ed and restarted **at once**, empty (quarantined by every client), a node frozen past a
//! TTL, proxy delays; one pass in `--short`, three in a full run — then one waiter **process** frozen
//! (SIGSTOP) for 1.75 TTL, then a drain with no fault (the full run's top-up to its grant target, then
//! one phase).
//!
//! Four processes of two tasks wait on **one** fair lock, each call up to [`WAIT_MS`]; a granted
//! holder does the lost-update probe and releases. Every call logs its rounds (`F` lines), and:
//! - **no overtaking** ([`crate::fairness`]): no waiter is granted while another, whose enqueue had
//!   completed before the first began its ticket round, still keeps its place — 0 inside the model;
//! - **exclusion**: the runner's overlap check and lost updates, as for any exclusive lock;
//! - **the queue drains**: grants in every window, the drain's and the frozen waiter's included (its
//!   entries expire within a TTL, then the others pass: those places are counted lost, and their
//!   overtakes apart, as the documented limit); no call that began after the faults ended times out; no call fails otherwise; the tap saw every granted call's rounds;
//!   and a TTL after the clients stopped no queue key is left on any node (cancelled waiters' places
//!   expire).
//!
//! The **control**: for the drain's last phase, two more processes wait on another resource with the
//! plain `acquire` (local queue and cross-process hand-off off), logged the same way. It orders nobody, so the same checker must
//! find overtakes there — a checker that finds none is blind, and the scenario fails.

use std::time::Duration;

use crate::client::LockMode;
use crate::env::{Ctx, Env, TTL_MS};
use crate::fair_log::{FairCall, FairEnd};
use crate::fairness;
use crate::record::Grant;

use super::findings::Findings;
use super::mixed_faults::{self, locking, Restart, Window};
use super::support::{mark, wait};

const RESOURCE: &str = "f0";
/// The control's resource and processes (see the module doc).
const CONTROL: &str = "u0";
const CONTROL_PROCS: usize = 2;
const PROCS: usize = 4;
const TASKS: usize = 2;
/// The client process frozen after the node faults (see the module doc).
const FROZEN: usize = PROCS - 1;
/// Each call's `acquire_timeout`: several TTLs, so a waiter outlives a frozen node's backlog and
/// timeouts stay rare (each one exempts a place from the check).
const WAIT_MS: u64 = 4_000;

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    let restart = Restart::AtOnce;
    mixed_faults::prepare(env).await?;
    for i in 0..PROCS {
        let mut args = locking(env, &format!("c{i}"), restart, LockMode::Fair, [RESOURCE]);
        args.tasks = TASKS;
        args.acquire_timeout_ms = Some(WAIT_MS);
        if i == FROZEN {
            // Frozen at a random point, it may be holding the lock between its validity check and
            // its counter write: a lost update by the limit of any lease (scenario 5), not a fault
            // of the fair lock. So it writes no counter; its holds are still checked for overlap.
            args.storage = None;
        }
        env.spawn(&args, &[])?;
    }
    let mut windows = mixed_faults::play_cycles(
        env,
        ctx,
        restart,
        Duration::ZERO,
        super::s18_semaphore::cycles(ctx),
    )
    .await;
    // A waiter process frozen past a TTL (the documented limit: a waiter that stops refreshing loses
    // its place): its entries must expire, not block the queue, and its places are seen lost.
    let from = mark();
    env.client(FROZEN).stop();
    wait(Duration::from_millis(TTL_MS * 7 / 4)).await;
    env.client(FROZEN).cont();
    windows.push(Window {
        name: "waiter frozen",
        from,
        to: mark(),
    });
    // The faults are over from here on; waiters must keep being served.
    let healed = mark();
    let from = healed;
    env.top_up(ctx).await;
    // The control joins for the drain: no fault is left, so no quarantine is needed.
    for i in 0..CONTROL_PROCS {
        let mut args = env.client_args(&format!("u{i}"));
        args.resources = vec![CONTROL.to_string()];
        args.lock = LockMode::Fair;
        args.unordered = true;
        args.tasks = TASKS;
        args.retries = super::s12_multi_resource::RETRIES;
        args.acquire_timeout_ms = Some(WAIT_MS);
        env.spawn(&args, &[])?;
    }
    wait(ctx.phase).await;
    windows.push(Window {
        name: "drain",
        from,
        to: mark(),
    });
    let logs = env.finish().await?;
    wait(Duration::from_millis(TTL_MS + 200)).await;
    let queue = format!("redlock:{{{RESOURCE}}}:fair:q");
    let left: Vec<String> = env.on_all_nodes(&[b"EXISTS", queue.as_bytes()]);
    let nodes_left = left.iter().filter(|r| r.as_str() != "0").count();

    let mut f = Findings::new(logs);
    let (fair, control): (Vec<FairCall>, Vec<FairCall>) = std::mem::take(&mut f.logs.fair)
        .into_iter()
        .partition(|c| c.resource == RESOURCE);
    let by_window: Vec<String> = windows
        .iter()
        .map(|w| {
            // Granted in the window (a wait may be longer than a window).
            let granted = |g: &&Grant| g.resource == RESOURCE && (w.from..w.to).contains(&g.t1);
            let n = f.logs.grants.iter().filter(granted).count();
            f.expect(n > 0, format!("no fair grant in window `{}`", w.name));
            format!("{} {n}", w.name)
        })
        .collect();
    let frozen_gap = windows
        .iter()
        .find(|w| w.name == "waiter frozen")
        .map_or(0, |w| longest_gap(&f.logs.grants, w));
    let c = fairness::check(&fair);
    let u = fairness::check(&control);
    let late_timeouts = fair
        .iter()
        .filter(|call| call.t0 >= healed && call.end == FairEnd::TimedOut)
        .count();
    let most = most_waiting(&fair);
    f.extra(format!(
        "fair grants by window: {}; fair calls {} (granted {}, timed out {}, cancelled at the stop \
         {}, failed {}); places {} (lost {}); contested pairs {}, overtakes {} (of lost places {}); \
         most waiting at once {most}; wait mean {:.1} ms, longest {:.1} ms; queue keys left a TTL \
         after the stop: {nodes_left} nodes; longest time without a fair grant while a waiter was \
         frozen {:.0} ms; control (plain acquire): {} grants, overtakes {}",
        by_window.join(", "),
        c.calls,
        c.granted,
        c.timed_out,
        c.cancelled,
        c.failed,
        c.places,
        c.lost,
        c.contested,
        c.overtakes,
        c.overtakes_of_lost,
        c.mean_wait_ns as f64 / 1e6,
        c.longest_wait_ns as f64 / 1e6,
        frozen_gap as f64 / 1e6,
        u.granted,
        u.overtakes,
    ));
    f.expect(c.overtakes == 0, "a waiter was overtaken inside the model");
    for e in &c.examples {
        f.failures.push(format!("overtake: {e}"));
    }
    f.expect(
        c.granted > 0 && c.places > 0,
        "no fair grant, or no enqueue seen to complete",
    );
    f.expect(
        c.blind == 0 && c.miscounted == 0,
        format!(
            "the tap missed rounds: {} granted calls with none, {} with fewer than their attempts",
            c.blind, c.miscounted
        ),
    );
    f.expect(
        c.failed == 0,
        "a fair call failed other than by its timeout",
    );
    f.expect(
        late_timeouts == 0,
        format!("{late_timeouts} calls that began after the faults ended timed out: the queue did not drain"),
    );
    f.expect(
        nodes_left == 0,
        format!("the queue key outlived every waiter by a TTL on {nodes_left} nodes"),
    );
    f.expect(
        most >= 2 && c.contested > 0,
        "waiters never queued behind each other",
    );
    f.expect(
        u.overtakes > 0,
        "the control's plain acquire showed no overtake: the checker is blind",
    );
    Ok(f)
}

/// The most calls in flight at one instant.
fn most_waiting(calls: &[FairCall]) -> usize {
    let mut events: Vec<(u64, i64)> = calls.iter().flat_map(|c| [(c.t0, 1), (c.t1, -1)]).collect();
    events.sort_unstable_by_key(|&(t, step)| (t, step));
    let (mut now, mut most) = (0i64, 0i64);
    for (_, step) in events {
        now += step;
        most = most.max(now);
    }
    most as usize
}

/// The longest stretch of `w` (ns) in which no grant of the fair lock returned.
fn longest_gap(grants: &[Grant], w: &Window) -> u64 {
    let mut times: Vec<u64> = grants
        .iter()
        .filter(|g| g.resource == RESOURCE && (w.from..w.to).contains(&g.t1))
        .map(|g| g.t1)
        .collect();
    times.sort_unstable();
    let edges = std::iter::once(w.from)
        .chain(times)
        .chain(std::iter::once(w.to));
    let edges: Vec<u64> = edges.collect();
    edges.windows(2).map(|p| p[1] - p[0]).max().unwrap_or(0)
}
