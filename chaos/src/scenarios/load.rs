//! The background load most scenarios run under: scenario 1's contending client processes, started
//! by scenario 1 itself and by the fault scenarios before they break their nodes. A module of its own
//! so that scenarios and `support` can all use it without importing each other.

use crate::env::{Ctx, Env};

use super::support::wait;

/// Background client processes; each runs 4 tasks.
pub const PROCS: usize = 4;

/// Starts the contending clients in the background and lets them run for a phase: the load a fault
/// scenario breaks its nodes under, and the calm before the fault.
pub async fn under_load(env: &mut Env, ctx: &Ctx) -> Result<(), String> {
    env.spawn_background(PROCS)?;
    wait(ctx.phase).await;
    Ok(())
}
