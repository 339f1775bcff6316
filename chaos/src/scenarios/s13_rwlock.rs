//! Scenario 13: read-write locks (`acquire_read`, `acquire_write`) under the faults of
//! [`super::mixed_faults`], with node 0 restarted **at once**, empty: inside the model only because
//! every client quarantines restarted nodes (`Config::quarantine`, `max_ttl` = the TTL).
//!
//! Four processes of four tasks on two resources; a quarter of the rounds write. A writer reads the
//! counter and its mirror, then (if still valid) writes the counter plus one and then the mirror: in
//! between, the pair is torn. A reader reads both, sleeps, reads both again: under its lock the four
//! values must be equal. The checker lets readers overlap each other, never a writer, and counts torn
//! reads; at the end every mirror must equal its counter (no writer stopped half-way).

use std::time::Duration;

use crate::client::LockMode;
use crate::counter::mirror_key;
use crate::env::{Ctx, Env};
use crate::record::{LockKind, Via};

use super::findings::Findings;
use super::mixed_faults::{self, locking, Restart};
use super::support::most_at_once;

const RESOURCES: [&str; 2] = ["w0", "w1"];
const PROCS: usize = 4;
const WRITE_RATIO: f64 = 0.25;

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    let restart = Restart::AtOnce;
    mixed_faults::prepare(env).await?;
    for i in 0..PROCS {
        let mut args = locking(env, &format!("c{i}"), restart, LockMode::Rw, RESOURCES);
        args.retries = super::s12_multi_resource::RETRIES;
        args.write_ratio = WRITE_RATIO;
        env.spawn(&args, &[])?;
    }
    let windows = mixed_faults::play(env, ctx, restart, Duration::ZERO).await;
    env.top_up(ctx).await;
    let logs = env.finish().await?;
    // The storage node outlives the clients until the runner drops the environment.
    let pairs: Vec<(&str, String, String)> = RESOURCES
        .iter()
        .map(|r| {
            let key = crate::counter::counter_key(r);
            let counter = env.storage.cmd(&[b"GET", key.as_bytes()]);
            let mirror = env.storage.cmd(&[b"GET", mirror_key(r).as_bytes()]);
            (*r, counter, mirror)
        })
        .collect();

    let mut f = Findings::new(logs);
    mixed_faults::judge_windows(&mut f, &windows);
    let of = |kind| f.logs.grants.iter().filter(move |g| g.kind == kind);
    let reads = of(LockKind::Read).count();
    let writes = of(LockKind::Write).count();
    let writer_handoffs = of(LockKind::Write)
        .filter(|g| matches!(g.via, Via::Handoff | Via::HandoffExtended))
        .count();
    let most_readers = RESOURCES
        .iter()
        .map(|r| most_readers_at_once(&f, r))
        .max()
        .unwrap_or(0);
    f.extra(format!(
        "read grants {reads}, write grants {writes} (handed over locally {writer_handoffs}), \
         most readers at once {most_readers}"
    ));
    f.expect(
        reads > 0 && writes > 0,
        "reads and writes must both be granted",
    );
    f.expect(
        most_readers >= 2,
        "readers never shared a resource: the shared mode was not exercised",
    );
    for (r, counter, mirror) in pairs {
        f.expect(
            counter == mirror,
            format!(
                "{r}: counter {counter} but mirror {mirror} at the end (a torn write was left)"
            ),
        );
    }
    Ok(f)
}

/// The most reader grants of `resource` holding at one instant.
fn most_readers_at_once(f: &Findings, resource: &str) -> usize {
    most_at_once(
        f.logs
            .grants
            .iter()
            .filter(|g| g.kind == LockKind::Read && g.resource == resource && g.end() > g.t1)
            .map(|g| (g.t1, g.end())),
    )
}
