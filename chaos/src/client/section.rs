//! The critical section of every lock kind, and the release; returns the grant to log.
//!
//! - **Exclusive and multi-resource** locks do the lost-update probe on each of their resources:
//!   read `counter:{r}`, sleep, and — only if the lock is still valid — write it back plus one.
//! - A **writer** of a read-write lock does the same on the counter, then writes the same value to
//!   `mirror:{r}`: between the two writes the pair is *torn*. It also checks the pair it read.
//! - A **reader** reads counter and mirror, sleeps, reads both again. Under a valid read lock no
//!   writer may be inside, so all four must be equal; anything else is a torn read ([`Seen::Torn`]).
//!
//! A holder that finds its lock expired after the pause skips the write and tries `extend` (which must
//! fail). A fenced lock also writes to the fenced store, whether or not it is still valid (see
//! [`super`]).

use std::time::Duration;

use redlock_engine::Lock;

use crate::clock::{mono_ns, with_first_poll};
use crate::counter::{counter_key, mirror_key, Counter};
use crate::record::{Fenced, Grant, LockKind, Outcome, Seen, Via, Wrote};

use super::ctx::Ctx;

/// A lock just granted, and what the log needs to know about how.
pub struct Held<'a> {
    pub holder: &'a str,
    /// The grant's `resource` field (see [`crate::record`]).
    pub label: String,
    pub resources: Vec<String>,
    pub kind: LockKind,
    pub lock: Lock,
    /// Call start, bound on the winning round's start, return (raw ns).
    pub times: [u64; 3],
    pub via: Via,
    /// This task's grant count, for `--extend-every`.
    pub nth: u64,
    /// Keep the lock until only 40% of the TTL is left (see `--linger-every`).
    pub linger: bool,
}

/// The critical section and the release.
pub async fn hold(
    ctx: &Ctx,
    held: Held<'_>,
    mut counter: Option<&mut Counter>,
) -> std::io::Result<Grant> {
    let Held {
        holder,
        label,
        resources,
        kind,
        mut lock,
        times: [t0, fp, t1],
        via,
        nth,
        linger,
    } = held;
    let vu0 = ctx.map.to_ns(lock.valid_until());
    let cs_start = mono_ns();
    ctx.log.begin(holder, &label, cs_start);
    let rw = matches!(kind, LockKind::Read | LockKind::Write);
    // (counter, mirror) of each resource; the mirror only for read-write locks.
    let mut read = Vec::new();
    if let Some(c) = counter.as_deref_mut() {
        for r in &resources {
            let value = c.get(&counter_key(r)).await?;
            let mirror = if rw { c.get(&mirror_key(r)).await? } else { 0 };
            read.push((value, mirror));
        }
    }
    tokio::time::sleep(Duration::from_micros(ctx.args.cs_sleep_us)).await;
    let (mut ext, mut ext_fp) = (Outcome::None, 0);
    if ctx.args.extend_every > 0 && nth.is_multiple_of(ctx.args.extend_every) && lock.is_valid() {
        let ext_start = mono_ns();
        let (r, fp) = with_first_poll(ctx.redlock.extend(&mut lock, ctx.ttl)).await;
        (ext, ext_fp) = (Outcome::of(&r), fp);
        if let Err(e) = r {
            ctx.log.error(holder, "extend", mono_ns() - ext_start, &e);
        }
    } else if linger {
        tokio::time::sleep(lock.remaining().saturating_sub(ctx.ttl * 2 / 5)).await;
    }
    // A reader looks again: under its lock nothing may have changed.
    let mut again = Vec::new();
    if let (Some(c), LockKind::Read) = (counter.as_deref_mut(), kind) {
        for r in &resources {
            again.push((c.get(&counter_key(r)).await?, c.get(&mirror_key(r)).await?));
        }
    }
    // Check before writing: past `valid_until` another client may hold the lock.
    let valid = lock.is_valid();
    let seen = match kind {
        _ if !rw || read.is_empty() => Seen::None,
        _ if !valid => Seen::Late,
        _ if read
            .iter()
            .chain(&again)
            .all(|&p| p == read[0] && p.0 == p.1) =>
        {
            Seen::Clean
        }
        _ => Seen::Torn,
    };
    if !valid && ext == Outcome::None {
        // Woke up (or was slow) past validity: extend must refuse, and we log what it said.
        let (r, fp) = with_first_poll(ctx.redlock.extend(&mut lock, ctx.ttl)).await;
        (ext, ext_fp) = (Outcome::of(&r), fp);
    }
    let wrote = match counter.as_deref_mut() {
        Some(_) if kind == LockKind::Read => Wrote::NoCounter,
        Some(c) if valid => {
            for (r, (value, _)) in resources.iter().zip(&read) {
                c.set(&counter_key(r), value + 1).await?;
                if rw {
                    c.set(&mirror_key(r), value + 1).await?;
                }
            }
            Wrote::Yes
        }
        Some(_) => Wrote::Skipped,
        None => Wrote::NoCounter,
    };
    // The fenced write goes out even past validity: fencing is what must stop a late holder.
    let token = lock.fencing_token();
    let fenced = match (counter, token) {
        (Some(c), Some(t)) => match c.fenced_write(&label, t).await? {
            Some(seq) => Fenced::Accepted(seq),
            None => Fenced::Rejected,
        },
        _ => Fenced::None,
    };
    let cs_end = mono_ns();
    let vu = ctx.map.to_ns(lock.valid_until());
    // For the next local holder, if this lock is handed over (only these kinds are).
    if matches!(kind, LockKind::Exclusive | LockKind::Write) {
        if let Ok(mut m) = ctx.released_until.lock() {
            m.insert(label.clone(), vu);
        }
    }
    let rel_start = mono_ns();
    let (released, rel_polls) = crate::clock::with_polls(ctx.redlock.release(lock)).await;
    let rel = Outcome::of(&released);
    if let Some(e) = released.as_ref().err().filter(|_| cs_end <= vu) {
        ctx.log.error(holder, "release", mono_ns() - rel_start, e);
    }
    Ok(Grant {
        holder: holder.to_string(),
        resource: label,
        ttl_ms: ctx.args.ttl_ms,
        drift_ns: ctx.drift_ns,
        t0,
        fp,
        t1,
        vu0,
        vu,
        ext_fp,
        cs_start,
        cs_end,
        rel_start,
        rel_fp: rel_polls.before_last,
        wrote,
        ext,
        rel,
        token,
        fenced,
        kind,
        via,
        seen,
    })
}
