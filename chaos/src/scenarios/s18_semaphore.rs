//! Scenario 18: semaphores under the faults of [`super::mixed_faults`] — a node `kill -9`ed and
//! restarted **at once**, empty (inside the model only because every client quarantines restarted
//! nodes), a node frozen, proxy delays; one pass in `--short`, three in a full run — with the property
//! **never more than K holders with valid permits at once** ([`crate::crowding`], judged by the
//! runner).
//!
//! Two processes of three tasks take permits of a **counting** semaphore of [`PERMITS`] on one
//! resource (`acquire_permit`: a quorum of `floor(K·N/(K+1)) + 1` = 4 of 5 nodes, so the faults, which
//! leave 4 nodes usable in every window, take away all its spare), and two more take slots of a
//! **slot** semaphore of [`SLOTS`] on another (`acquire_slot`: K exclusive locks on a majority). Six
//! contenders for K places hold each for [`HOLD_US`], so the semaphore is often full: a K+1-th
//! holder would show. Every eighth hold extends its permit. No counter: K holders share the
//! resource, so a read-modify-write probe would lose updates by design.
//!
//! The scenario adds: grants of each kind in every window, and each semaphore full (K holders at once)
//! at least once — a run that never filled it did not test the bound.
//!
//! The **control**: two more processes take slots of a third resource, one asking for K slots and
//! one for K+1 (slots do not check that callers agree, see `kinds::slots`), so K+1 holders of a
//! semaphore the checker counts with K must show there. Its grants are judged by this scenario, kept
//! out of the runner's, and it must be crowded — else the checker is blind.

use std::time::Duration;

use crate::client::LockMode;
use crate::crowding;
use crate::env::{Ctx, Env};
use crate::record::LockKind;

use super::findings::Findings;
use super::mixed_faults::{self, locking, Restart};

/// The counting semaphore's resource and K.
const PERMIT_RESOURCE: &str = "sem0";
const PERMITS: u32 = 2;
/// The slot semaphore's resource and K.
const SLOT_RESOURCE: &str = "slots0";
const SLOTS: u32 = 3;
/// The control's resource (see the module doc).
const CONTROL: &str = "slots1";
/// Processes per semaphore, tasks per process.
const PROCS: usize = 2;
const TASKS: usize = 3;
/// How long a holder keeps its permit or slot: long enough that K of them are held together.
const HOLD_US: u64 = 5_000;
/// The control's holds: longer, so that its K+1 holders show even on a slow (debug, loaded) run.
const CONTROL_HOLD_US: u64 = 20_000;
/// Shortest window of the timeline. With node 4 late and node 1 delayed, a permit needs all four
/// other nodes, one of them 40 ms away, so a 0.6 s `--short` window held 7-19 permits. A TTL keeps
/// that well clear of 0 on a loaded machine.
const MIN_WINDOW: Duration = Duration::from_millis(crate::env::TTL_MS);

/// Passes of the fault timeline: one in `--short` (CI's time), three in a full run, so that more of
/// its grants come under the faults than after them.
pub fn cycles(ctx: &Ctx) -> usize {
    if ctx.short {
        1
    } else {
        3
    }
}

/// How this scenario's faulted nodes come back.
const RESTART: Restart = Restart::AtOnce;

/// Spawns a client taking `k` units of `resource` as `mode` and holding each for `hold_us`: the
/// semaphores' clients and the control's differ only in these.
fn spawn_counting(
    env: &mut Env,
    id: &str,
    (mode, resource, k): (LockMode, &str, u32),
    hold_us: u64,
) -> Result<(), String> {
    let mut args = locking(env, id, RESTART, mode, [resource]);
    args.permits = k;
    args.tasks = TASKS;
    args.retries = super::s12_multi_resource::RETRIES;
    args.cs_sleep_us = hold_us;
    args.storage = None;
    env.spawn(&args, &[])?;
    Ok(())
}

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    mixed_faults::prepare(env).await?;
    let kinds = [
        ("p", LockMode::Permit, PERMIT_RESOURCE, PERMITS),
        ("s", LockMode::Slot, SLOT_RESOURCE, SLOTS),
    ];
    for (prefix, mode, resource, k) in kinds {
        for i in 0..PROCS {
            let id = format!("{prefix}{i}");
            spawn_counting(env, &id, (mode, resource, k), HOLD_US)?;
        }
    }
    // The control: callers of one slot semaphore that disagree on K, which slots do not check.
    for (i, k) in [SLOTS, SLOTS + 1].into_iter().enumerate() {
        let id = format!("u{i}");
        spawn_counting(env, &id, (LockMode::Slot, CONTROL, k), CONTROL_HOLD_US)?;
    }
    let windows = mixed_faults::play_cycles(env, ctx, RESTART, MIN_WINDOW, cycles(ctx)).await;
    env.top_up_of(ctx, |id| !id.starts_with('u')).await;
    let mut logs = env.finish().await?;
    // Judged here, not by the runner: its K+1 holders are the point.
    let control: Vec<_>;
    (control, logs.grants) = logs.grants.into_iter().partition(|g| g.resource == CONTROL);
    let u = crowding::check(&control);

    let mut f = Findings::new(logs);
    f.extra(format!(
        "control (slots asked with K = {SLOTS} and {}): {} grants, over K {}, most at once {}",
        SLOTS + 1,
        u.grants,
        u.crowded,
        u.most
    ));
    f.expect(
        u.crowded > 0,
        "the control's K+1 holders went unseen: the checker is blind",
    );
    mixed_faults::judge_windows(&mut f, &windows);
    for (name, kind, resource) in [
        ("permit", LockKind::Permit(PERMITS), PERMIT_RESOURCE),
        ("slot", LockKind::Slot(SLOTS), SLOT_RESOURCE),
    ] {
        let of_kind: Vec<_> = f
            .logs
            .grants
            .iter()
            .filter(|g| g.kind == kind && g.resource == resource)
            .cloned()
            .collect();
        let c = crowding::check(&of_kind);
        // Granted in the window: a call waiting behind K holders may span two windows.
        let by_window: Vec<usize> = windows
            .iter()
            .map(|w| {
                of_kind
                    .iter()
                    .filter(|g| (w.from..w.to).contains(&g.t1))
                    .count()
            })
            .collect();
        for (w, n) in windows.iter().zip(&by_window) {
            f.expect(*n > 0, format!("no {name} grant in window `{}`", w.name));
        }
        let by_window: Vec<String> = by_window.iter().map(usize::to_string).collect();
        let k = kind.limit().unwrap_or(0);
        f.extra(format!(
            "{name}s (K = {k}) {}: most holders at once {}, over K {}, by window {}",
            of_kind.len(),
            c.most,
            c.crowded,
            by_window.join("/")
        ));
        f.expect(
            c.most >= k as usize,
            format!(
                "the {name} semaphore was never full ({} of {k} at most): the bound was not tested",
                c.most
            ),
        );
    }
    let gave_up = f.gave_up();
    f.extra(format!("acquire calls that gave up: {gave_up}"));
    Ok(f)
}
