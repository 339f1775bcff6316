//! Scenario 5: a holder process frozen with SIGSTOP in the middle of its critical section, past its
//! validity. Liveness: another client gets the resource once the frozen holder's keys expire. Safety as
//! far as a lease can give it: on waking, the holder sees `valid_until` in the past, `extend` fails, and
//! it skips its write. The checker shows the overrun — the documented limit of any lease lock.
//! Fencing closes that gap: the woken holder's write to the fenced store (sent regardless of its
//! validity) carries a token below the later holders' and must be rejected.

use std::time::Duration;

use crate::env::{Ctx, Env, TTL_MS};
use crate::record::{Fenced, Outcome, Wrote};

use super::findings::Findings;
use super::support::{mark, ms_between, wait};

/// The victim's pause between reading and writing the counter: long enough that the SIGSTOP, sent a
/// few milliseconds after the critical section starts, lands inside it.
const VICTIM_CS_MS: u64 = 400;

pub async fn run(env: &mut Env, ctx: &Ctx) -> Result<Findings, String> {
    env.spawn_background(3)?;
    let mut victim = env.client_args("victim");
    victim.resources = vec!["r0".into()];
    victim.tasks = 1;
    victim.cs_sleep_us = VICTIM_CS_MS * 1000;
    victim.extend_every = 0;
    let v = env.spawn(&victim, &[])?;
    wait(ctx.phase / 2).await;

    let cs_start = wait_inside_cs(&victim.log, Duration::from_secs(20))
        .await
        .ok_or("the victim never entered a critical section")?;
    env.client(v).stop();
    let stopped = mark();
    wait(Duration::from_millis(TTL_MS * 5 / 2)).await;
    let resumed = mark();
    env.client(v).cont();
    wait(ctx.phase).await;
    env.top_up(ctx).await;
    let logs = env.finish().await?;

    let mut f = Findings::new(logs);
    f.expect(
        ms_between(cs_start, stopped) < VICTIM_CS_MS as f64 / 2.0,
        "the SIGSTOP did not land early in the critical section",
    );
    let Some(g) = f
        .logs
        .grants
        .iter()
        .find(|g| g.holder == "victim.0" && g.cs_start == cs_start)
        .cloned()
    else {
        f.expect(false, "the frozen holder's grant was never logged");
        return Ok(f);
    };
    let others: Vec<u64> = f
        .logs
        .grants
        .iter()
        .filter(|o| o.resource == g.resource && o.holder != g.holder)
        .filter(|o| o.t1 > g.vu && o.t1 < resumed)
        .map(|o| o.t1)
        .collect();
    let first = others.iter().min().map(|t| ms_between(g.vu, *t));
    f.extra(format!(
        "frozen holder overran its validity by {:.0} ms, extend on waking: {}, write skipped: {}, \
         others held r0 {} times while it was frozen (first {:.0} ms after its validity ended)",
        ms_between(g.vu, g.cs_end),
        g.ext.code(),
        g.wrote == Wrote::Skipped,
        others.len(),
        first.unwrap_or(f64::NAN)
    ));
    f.expect(g.cs_end > g.vu, "the frozen holder did not overrun");
    f.expect(
        !matches!(g.ext, Outcome::Ok | Outcome::None),
        "extend did not fail on waking",
    );
    f.expect(g.wrote == Wrote::Skipped, "the woken holder still wrote");
    f.extra(format!(
        "its fenced write (token {}): {}",
        g.token.map_or("none".into(), |t| t.to_string()),
        match g.fenced {
            Fenced::Rejected => "rejected".to_string(),
            Fenced::Accepted(seq) => format!("ACCEPTED as write {seq}"),
            Fenced::None => "not sent".to_string(),
        }
    ));
    f.expect(
        g.fenced == Fenced::Rejected,
        "the fenced store did not reject the woken holder's stale write",
    );
    f.expect(
        !others.is_empty(),
        "nobody got the resource while its holder was frozen",
    );
    Ok(f)
}

/// Polls the victim's log until a critical section begins that started after this call (one already
/// under way may be about to end); returns that section's start.
async fn wait_inside_cs(log: &std::path::Path, within: Duration) -> Option<u64> {
    let since = mark();
    let until = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < until {
        if let Ok(text) = std::fs::read_to_string(log) {
            let begins: Vec<&str> = text.lines().filter(|l| l.starts_with("B ")).collect();
            let grants = text.lines().filter(|l| l.starts_with("G ")).count();
            let start: Option<u64> = begins
                .last()
                .and_then(|l| l.rsplit(' ').next()?.parse().ok());
            if let Some(start) = start.filter(|&s| begins.len() > grants && s >= since) {
                return Some(start);
            }
        }
        wait(Duration::from_millis(2)).await;
    }
    None
}
