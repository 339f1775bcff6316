//! The log format shared by clients (writers) and the checker (reader): one text line per event, all
//! times in `CLOCK_MONOTONIC` nanoseconds, so logs of different processes line up.
//!
//! - `A t0 t1 outcome` — one acquire call (`try_acquire`, or a waiting `acquire*` with its retries and
//!   its wait in the local queue), whatever its outcome.
//! - `B holder resource cs_start` — a critical section begins (scenario 5 freezes the holder on it).
//! - `G holder resource ttl_ms drift_ns t0 fp t1 vu0 vu ext_fp cs_start cs_end rel_start wrote ext rel
//!   token fenced kind via seen rel_fp` — one grant: call start, `fp` (an upper bound on when the engine took
//!   the start of the round that won, see [`crate::clock::with_polls`]) and return; `valid_until` at
//!   grant (`vu0`) and at the end (`vu`, after any extend, whose first poll ended at `ext_fp`, 0 if
//!   none); the critical section; when release started (0 if never); whether the counter write
//!   happened (`1`), was skipped because the lock was no longer valid (`0`) or there is none (`-`); the
//!   extend and release outcomes; `token fenced`: the lock's fencing token (`-` if unfenced) and the
//!   fenced store's answer to the write with it (`r` rejected, the store's sequence number of the
//!   accepted write, `-` none); `kind` ([`LockKind`]), `via` ([`Via`]) and `seen` ([`Seen`]); when
//!   the release's last poll but one ended (`rel_fp`, 0 if none: after the release round's start).
//!   A multi-resource grant's `resource` is its resources joined by `+` (`m0+m1`).
//! - `W wall_ns mono_ns` — a wall-clock sample (scenario 10 shows the client's wall clock jumping).
//! - `E holder op took_ns message` — a release or extend of a still-valid lock failed: why, for the
//!   report.
//! - `R ...` — a renewed lock's hold (scenario 15), see [`crate::renewal_log`].
//!
//! - this file: the line types ([`Record`]) and their parser, and the writer ([`Log`]);
//! - [`fields`]: the fields that are codes ([`Outcome`], [`Wrote`], [`Fenced`], [`LockKind`], [`Via`],
//!   [`Seen`]);
//! - [`grant`]: the `G` line ([`Grant`]).

mod fields;
mod grant;

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use redlock_engine::LockError;

pub use fields::{Fenced, LockKind, Outcome, Seen, Via, Wrote};
pub use grant::{drift_ns, Grant, RESOURCE_SEPARATOR};

/// One parsed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Attempt { t0: u64, t1: u64, outcome: Outcome },
    Begin { holder: String, cs_start: u64 },
    Grant(Grant),
    Wall { wall_ns: i64, mono_ns: u64 },
    Error(String),
}

impl Record {
    /// Parses one line; `None` for a malformed or truncated line (a killed writer may leave one).
    pub fn parse(line: &str) -> Option<Self> {
        let f: Vec<&str> = line.split(' ').collect();
        let n = |i: usize| f.get(i)?.parse::<u64>().ok();
        match (f.first().copied(), f.len()) {
            (Some("A"), 4) => Some(Self::Attempt {
                t0: n(1)?,
                t1: n(2)?,
                outcome: Outcome::parse(f[3])?,
            }),
            (Some("B"), 4) => Some(Self::Begin {
                holder: f[1].to_string(),
                cs_start: n(3)?,
            }),
            (Some("E"), n) if n >= 4 => Some(Self::Error(line[2..].to_string())),
            (Some("W"), 3) => Some(Self::Wall {
                wall_ns: f[1].parse().ok()?,
                mono_ns: n(2)?,
            }),
            (Some("G"), 23) => Grant::parse(&f).map(Self::Grant),
            _ => None,
        }
    }
}

/// An append-only log file; each record is one `write`, so a line is never interleaved with another.
#[derive(Debug)]
pub struct Log {
    file: Mutex<File>,
}

impl Log {
    /// Creates (truncates) `path`.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            file: Mutex::new(File::create(path)?),
        })
    }

    /// Writes one whole line (with its newline), e.g. a [`crate::renewal_log::Renewal`].
    pub fn write(&self, line: &str) {
        // Unbuffered on purpose: the orchestrator reads `B` lines while the client runs, and a client
        // killed at the end of a failed scenario loses nothing already logged.
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        file.write_all(line.as_bytes()).expect("write log");
    }

    /// Logs an acquire attempt.
    pub fn attempt(&self, t0: u64, t1: u64, outcome: Outcome) {
        self.write(&format!("A {t0} {t1} {}\n", outcome.code()));
    }

    /// Logs the start of a critical section.
    pub fn begin(&self, holder: &str, resource: &str, cs_start: u64) {
        self.write(&format!("B {holder} {resource} {cs_start}\n"));
    }

    /// Logs a finished grant.
    pub fn grant(&self, g: &Grant) {
        self.write(&g.line());
    }

    /// Logs a failed release or extend of a lock that was still valid.
    pub fn error(&self, holder: &str, op: &str, took_ns: u64, err: &LockError) {
        // One line: the message may not contain a newline.
        let msg = err.to_string().replace('\n', " ");
        self.write(&format!("E {holder} {op} {took_ns} {msg}\n"));
    }

    /// Logs a wall-clock sample.
    pub fn wall(&self, wall_ns: i64, mono_ns: u64) {
        self.write(&format!("W {wall_ns} {mono_ns}\n"));
    }
}

#[cfg(test)]
mod tests {
    // Here, not in `grant`: the round trip goes through `Record::parse`, which picks the `G` line by
    // its field count.
    use super::*;

    #[test]
    fn a_grant_survives_the_round_trip() {
        let g = Grant {
            holder: "c1.2".into(),
            resource: "r0".into(),
            ttl_ms: 1000,
            drift_ns: 12_000_000,
            t0: 1,
            fp: 2,
            t1: 3,
            vu0: 4,
            vu: 5,
            ext_fp: 0,
            cs_start: 6,
            cs_end: 7,
            rel_start: 8,
            rel_fp: 9,
            wrote: Wrote::Skipped,
            ext: Outcome::Expired,
            rel: Outcome::NotOwner,
            token: Some(u64::MAX),
            fenced: Fenced::Accepted(7),
            kind: LockKind::Write,
            via: Via::HandoffExtended,
            seen: Seen::Torn,
        };
        let line = g.line();
        assert_eq!(
            Record::parse(line.trim_end()),
            Some(Record::Grant(g.clone()))
        );
        assert_eq!(Record::parse(&line[..line.len() / 2]), None);
        assert_eq!(g.end(), 5);
        let many = Grant {
            resource: "m2+m0".into(),
            kind: LockKind::Many,
            via: Via::Nodes(3),
            seen: Seen::None,
            ..g
        };
        assert_eq!(
            Record::parse(many.line().trim_end()),
            Some(Record::Grant(many.clone()))
        );
        assert_eq!(many.resources().collect::<Vec<_>>(), ["m2", "m0"]);
        assert_eq!(many.process(), "c1");
        // Semaphore kinds carry their count.
        for kind in [LockKind::Permit(2), LockKind::Slot(64)] {
            let g = Grant {
                kind,
                ..many.clone()
            };
            assert_eq!(Record::parse(g.line().trim_end()), Some(Record::Grant(g)));
        }
        assert_eq!(LockKind::parse("p0"), None);
        assert_eq!(LockKind::parse("sx"), None);
    }
}
