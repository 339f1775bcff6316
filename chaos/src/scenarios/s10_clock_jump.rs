//! Scenario 10: the wall clock of two client processes jumps back and forth by days while they contend
//! with two normal clients. The engine only uses the monotonic clock, so grants and validity must not
//! notice: no overlap, no lost update, no validity lie.
//!
//! The jumping clients run under libfaketime (`LD_PRELOAD`) with `DONT_FAKE_MONOTONIC=1`, reading their
//! offset from a file the orchestrator rewrites (`FAKETIME_TIMESTAMP_FILE`, `FAKETIME_NO_CACHE=1`). They
//! log wall-clock samples, so the scenario can prove the jumps really happened inside them.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::clock::{mono_ns, wall_ns};
use crate::env::{Ctx, Env};

use super::findings::Findings;
use super::support::wait;

/// Offsets written to the timestamp file in turn (libfaketime's relative syntax).
const OFFSETS: [&str; 5] = ["-3d", "+2h", "-45m", "+30d", "+0"];
const JUMP_EVERY: Duration = Duration::from_millis(400);

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    let lib = ctx.faketime.clone()?;
    let file = env.dir.join("faketime.rc");
    let write = |offset: &str| {
        std::fs::write(&file, format!("{offset}\n")).map_err(|e| format!("{}: {e}", file.display()))
    };
    write(OFFSETS[0])?;
    env.spawn_background(2)?;
    let vars = [
        ("LD_PRELOAD", lib.display().to_string()),
        ("DONT_FAKE_MONOTONIC", "1".to_string()),
        ("FAKETIME_TIMESTAMP_FILE", file.display().to_string()),
        ("FAKETIME_NO_CACHE", "1".to_string()),
    ];
    for i in 0..2 {
        let mut args = env.client_args(&format!("jump{i}"));
        args.wall_samples = true;
        env.spawn(&args, &vars)?;
    }
    // The orchestrator's own wall-minus-monotonic offset: what an unshifted clock shows.
    let real = wall_ns() - mono_ns() as i64;
    let until = tokio::time::Instant::now() + ctx.phase * 3;
    let mut jumps = 0;
    while tokio::time::Instant::now() < until {
        write(OFFSETS[jumps % OFFSETS.len()])?;
        jumps += 1;
        wait(JUMP_EVERY).await;
    }
    env.top_up(ctx).await;
    let logs = env.finish().await?;

    let mut f = Findings::new(logs);
    // Offsets seen inside the jumping clients, in whole minutes.
    let seen: BTreeSet<i64> = f
        .logs
        .walls
        .iter()
        .filter(|(stem, _, _)| stem.starts_with("jump"))
        .map(|(_, wall, mono)| (wall - *mono as i64 - real) / 60_000_000_000)
        .collect();
    let (lo, hi) = (
        seen.first().copied().unwrap_or(0),
        seen.last().copied().unwrap_or(0),
    );
    let jumping_grants = f
        .logs
        .grants
        .iter()
        .filter(|g| g.holder.starts_with("jump"))
        .count();
    f.extra(format!(
        "jumping clients: grants {jumping_grants}, wall clock at {} offsets from {:.1} d to {:+.1} d, {jumps} jumps",
        seen.len(),
        lo as f64 / 1440.0,
        hi as f64 / 1440.0
    ));
    f.expect(
        seen.len() >= 3 && hi - lo >= 24 * 60,
        "libfaketime did not move the clients' wall clock",
    );
    f.expect(jumping_grants > 0, "the jumping clients got no grant");
    Ok(f)
}
