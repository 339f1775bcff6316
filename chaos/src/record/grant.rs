//! The `G` line: one grant, start to release ([`Grant`]), written with [`Grant::line`] and read back
//! with [`Grant::parse`].

use std::time::Duration;

use super::fields::{Fenced, LockKind, Outcome, Seen, Via, Wrote};

/// One grant, start to release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub holder: String,
    pub resource: String,
    pub ttl_ms: u64,
    pub drift_ns: u64,
    pub t0: u64,
    pub fp: u64,
    pub t1: u64,
    pub vu0: u64,
    pub vu: u64,
    pub ext_fp: u64,
    pub cs_start: u64,
    pub cs_end: u64,
    pub rel_start: u64,
    /// When the release's last poll but one ended (0 if never released): after its round's start,
    /// the start a next holder it granted counts from (see [`crate::clock::with_polls`]).
    pub rel_fp: u64,
    pub wrote: Wrote,
    pub ext: Outcome,
    pub rel: Outcome,
    /// The lock's fencing token, if fenced.
    pub token: Option<u64>,
    pub fenced: Fenced,
    pub kind: LockKind,
    pub via: Via,
    pub seen: Seen,
}

/// A grant's `drift_ns` for a lock of `ttl`: the engine's rule, TTL x drift_factor + 2 ms, with the
/// library's default factor.
pub fn drift_ns(ttl: Duration) -> u64 {
    let drift =
        ttl.mul_f64(redlock_engine::Config::default().drift_factor) + Duration::from_millis(2);
    drift.as_nanos() as u64
}

/// Separates the resources of a multi-resource grant in its `resource` field.
pub const RESOURCE_SEPARATOR: char = '+';

impl Grant {
    /// A grant of a plain exclusive lock from the nodes (one attempt) to `holder` on `resource`,
    /// as a critical section that neither extends, writes the counter nor fences logs it; its times
    /// are 0 until the caller sets them.
    pub fn exclusive(holder: &str, resource: &str, ttl_ms: u64, drift_ns: u64) -> Self {
        Self {
            holder: holder.to_string(),
            resource: resource.to_string(),
            ttl_ms,
            drift_ns,
            t0: 0,
            fp: 0,
            t1: 0,
            vu0: 0,
            vu: 0,
            ext_fp: 0,
            cs_start: 0,
            cs_end: 0,
            rel_start: 0,
            rel_fp: 0,
            wrote: Wrote::NoCounter,
            ext: Outcome::None,
            rel: Outcome::None,
            token: None,
            fenced: Fenced::None,
            kind: LockKind::Exclusive,
            via: Via::Nodes(1),
            seen: Seen::None,
        }
    }

    /// The resources this grant holds: one, or several for a multi-resource lock.
    pub fn resources(&self) -> impl Iterator<Item = &str> {
        self.resource.split(RESOURCE_SEPARATOR)
    }

    /// The client process of the holder (`c1` of `c1.3`).
    pub fn process(&self) -> &str {
        self.holder.split('.').next().unwrap_or_default()
    }

    /// When the holder stopped relying on the lock: its validity end, or the start of its release.
    pub fn end(&self) -> u64 {
        if self.rel_start > 0 {
            self.vu.min(self.rel_start)
        } else {
            self.vu
        }
    }

    pub(super) fn line(&self) -> String {
        let wrote = match self.wrote {
            Wrote::Yes => "1",
            Wrote::Skipped => "0",
            Wrote::NoCounter => "-",
        };
        format!(
            "G {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}\n",
            self.holder,
            self.resource,
            self.ttl_ms,
            self.drift_ns,
            self.t0,
            self.fp,
            self.t1,
            self.vu0,
            self.vu,
            self.ext_fp,
            self.cs_start,
            self.cs_end,
            self.rel_start,
            wrote,
            self.ext.code(),
            self.rel.code(),
            self.token.map_or("-".into(), |t| t.to_string()),
            self.fenced.code(),
            self.kind.code(),
            self.via.code(),
            self.seen.code(),
            self.rel_fp,
        )
    }

    /// A `G` line's fields (`f[0]` is `G`); `None` if one does not parse.
    pub(super) fn parse(f: &[&str]) -> Option<Self> {
        let n = |i: usize| f.get(i)?.parse::<u64>().ok();
        Some(Grant {
            holder: f[1].to_string(),
            resource: f[2].to_string(),
            ttl_ms: n(3)?,
            drift_ns: n(4)?,
            t0: n(5)?,
            fp: n(6)?,
            t1: n(7)?,
            vu0: n(8)?,
            vu: n(9)?,
            ext_fp: n(10)?,
            cs_start: n(11)?,
            cs_end: n(12)?,
            rel_start: n(13)?,
            wrote: match f[14] {
                "1" => Wrote::Yes,
                "0" => Wrote::Skipped,
                "-" => Wrote::NoCounter,
                _ => return None,
            },
            ext: Outcome::parse(f[15])?,
            rel: Outcome::parse(f[16])?,
            token: match f[17] {
                "-" => None,
                t => Some(t.parse().ok()?),
            },
            fenced: Fenced::parse(f[18])?,
            kind: LockKind::parse(f[19])?,
            via: Via::parse(f[20])?,
            seen: Seen::parse(f[21])?,
            rel_fp: n(22)?,
        })
    }
}
