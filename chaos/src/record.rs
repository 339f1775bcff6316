//! The log format shared by clients (writers) and the checker (reader): one text line per event, all
//! times in `CLOCK_MONOTONIC` nanoseconds, so logs of different processes line up.
//!
//! - `A t0 t1 outcome` — one acquire call (`try_acquire`, or a waiting `acquire*` with its retries and
//!   its wait in the local queue), whatever its outcome.
//! - `B holder resource cs_start` — a critical section begins (scenario 5 freezes the holder on it).
//! - `G holder resource ttl_ms drift_ns t0 fp t1 vu0 vu ext_fp cs_start cs_end rel_start wrote ext rel
//!   token fenced kind via seen` — one grant: call start, `fp` (an upper bound on when the engine took
//!   the start of the round that won, see [`crate::clock::with_polls`]) and return; `valid_until` at
//!   grant (`vu0`) and at the end (`vu`, after any extend, whose first poll ended at `ext_fp`, 0 if
//!   none); the critical section; when release started (0 if never); whether the counter write
//!   happened (`1`), was skipped because the lock was no longer valid (`0`) or there is none (`-`); the
//!   extend and release outcomes; `token fenced`: the lock's fencing token (`-` if unfenced) and the
//!   fenced store's answer to the write with it (`r` rejected, the store's sequence number of the
//!   accepted write, `-` none); `kind` ([`LockKind`]), `via` ([`Via`]) and `seen` ([`Seen`]).
//!   A multi-resource grant's `resource` is its resources joined by `+` (`m0+m1`).
//! - `W wall_ns mono_ns` — a wall-clock sample (scenario 10 shows the client's wall clock jumping).
//! - `E holder op took_ns message` — a release or extend of a still-valid lock failed: why, for the
//!   report.
//! - `R ...` — a renewed lock's hold (scenario 15), see [`crate::renewal_log`].

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use redlock_engine::LockError;

/// How a lock operation ended, as logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Not attempted.
    None,
    /// Succeeded.
    Ok,
    /// `NotOwner`.
    NotOwner,
    /// `AlreadyExpired`.
    Expired,
    /// `Contended`.
    Contended,
    /// `QuorumNotReached`.
    Quorum,
    /// `ValidityExpired`.
    Validity,
    /// `Overloaded`: admission control gave the round no turn in time (the nodes were not asked).
    Overloaded,
    /// Any other error.
    Other,
}

impl Outcome {
    /// The outcome of a lock call.
    pub fn of<T>(result: &Result<T, LockError>) -> Self {
        match result {
            Ok(_) => Self::Ok,
            Err(LockError::NotOwner) => Self::NotOwner,
            Err(LockError::AlreadyExpired) => Self::Expired,
            Err(LockError::Contended { .. }) => Self::Contended,
            Err(LockError::QuorumNotReached { .. }) => Self::Quorum,
            Err(LockError::ValidityExpired { .. }) => Self::Validity,
            Err(LockError::Overloaded { .. }) => Self::Overloaded,
            Err(_) => Self::Other,
        }
    }

    /// The word in the log.
    pub fn code(self) -> &'static str {
        match self {
            Self::None => "-",
            Self::Ok => "ok",
            Self::NotOwner => "not-owner",
            Self::Expired => "expired",
            Self::Contended => "contended",
            Self::Quorum => "quorum",
            Self::Validity => "validity",
            Self::Overloaded => "overloaded",
            Self::Other => "other",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [
            Self::None,
            Self::Ok,
            Self::NotOwner,
            Self::Expired,
            Self::Contended,
            Self::Quorum,
            Self::Validity,
            Self::Overloaded,
            Self::Other,
        ]
        .into_iter()
        .find(|o| o.code() == s)
    }
}

/// Whether the protected counter was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrote {
    /// Read-modify-write completed under a lock that was valid when the write was issued.
    Yes,
    /// The lock was no longer valid after the pause: the write was skipped.
    Skipped,
    /// This client protects no counter.
    NoCounter,
}

/// What the fenced store answered to a grant's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fenced {
    /// No fenced write (unfenced lock, or no storage).
    None,
    /// Accepted; the store's sequence number of the write (its apply order for the resource).
    Accepted(u64),
    /// Rejected: a higher token had already been accepted.
    Rejected,
}

impl Fenced {
    fn code(self) -> String {
        match self {
            Self::None => "-".into(),
            Self::Accepted(seq) => seq.to_string(),
            Self::Rejected => "r".into(),
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "-" => Some(Self::None),
            "r" => Some(Self::Rejected),
            n => n.parse().ok().map(Self::Accepted),
        }
    }
}

/// What kind of lock a grant is: the checker's overlap rule depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// `x`: exclusive, one resource (`try_acquire`, `try_acquire_fenced`, `acquire`).
    Exclusive,
    /// `m`: exclusive on several resources at once (`acquire_many`).
    Many,
    /// `r`: a shared (reader) hold of a read-write lock.
    Read,
    /// `w`: the exclusive (writer) hold of a read-write lock.
    Write,
}

impl LockKind {
    /// Whether holds of this kind may overlap each other (never one of another kind).
    pub fn shared(self) -> bool {
        self == Self::Read
    }

    /// The letter in the log.
    pub fn code(self) -> &'static str {
        match self {
            Self::Exclusive => "x",
            Self::Many => "m",
            Self::Read => "r",
            Self::Write => "w",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Self::Exclusive, Self::Many, Self::Read, Self::Write]
            .into_iter()
            .find(|k| k.code() == s)
    }
}

/// How a grant reached its holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// From the nodes, after this many attempts (`Lock::attempts`).
    Nodes(u32),
    /// `h`: handed over by the previous local holder, without a round trip.
    Handoff,
    /// `he`: handed over, and extended on take-over (too little validity was left).
    HandoffExtended,
}

impl Via {
    fn code(self) -> String {
        match self {
            Self::Nodes(n) => n.to_string(),
            Self::Handoff => "h".into(),
            Self::HandoffExtended => "he".into(),
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "h" => Some(Self::Handoff),
            "he" => Some(Self::HandoffExtended),
            n => n.parse().ok().map(Self::Nodes),
        }
    }
}

/// What a read-write lock's holder saw of the counter and its mirror (a writer writes the counter,
/// then the mirror: in between, the pair is torn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// `-`: not a read-write lock.
    None,
    /// `ok`: counter and mirror equal, and (for a reader) unchanged across its critical section.
    Clean,
    /// `torn`: they differed, or changed under a reader's lock, while the lock was still valid.
    Torn,
    /// `late`: the lock was no longer valid after the reads, so they prove nothing.
    Late,
}

impl Seen {
    fn code(self) -> &'static str {
        match self {
            Self::None => "-",
            Self::Clean => "ok",
            Self::Torn => "torn",
            Self::Late => "late",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Self::None, Self::Clean, Self::Torn, Self::Late]
            .into_iter()
            .find(|k| k.code() == s)
    }
}

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

/// Separates the resources of a multi-resource grant in its `resource` field.
pub const RESOURCE_SEPARATOR: char = '+';

impl Grant {
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

    fn line(&self) -> String {
        let wrote = match self.wrote {
            Wrote::Yes => "1",
            Wrote::Skipped => "0",
            Wrote::NoCounter => "-",
        };
        format!(
            "G {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}\n",
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
        )
    }
}

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
            (Some("G"), 22) => Some(Self::Grant(Grant {
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
            })),
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
    }
}
