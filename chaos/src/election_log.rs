//! The log lines of an election (scenario 20): a leader's `L` lines, written by the candidates of
//! [`crate::client::elect`], and an observer's `O` lines; read by [`crate::leaders`].
//!
//! - `L holder term t1 at vu step` — a leader's claim: at `at` (raw `CLOCK_MONOTONIC` ns), the
//!   leadership of `term`, won when its campaign returned at `t1`, was valid until `vu`. `step`
//!   ([`Step`]) says what the leader was doing: `won` (the campaign just returned), `work` (a step of
//!   its work, taken only after `Leadership::is_valid` said yes), `lost:<why>` (its `lost()`
//!   resolved, with the error's word) or `resigned` (it stopped at the end of the run). A leader
//!   killed with `kill -9` writes no last line: its claim ends with the last `vu` it logged, which is
//!   as far as it relied on it.
//! - `O observer term revision value at` — an observer's `observe()` stream gave the leader of
//!   `term` at `revision`, publishing `value` (the candidate's id), at `at`.

use crate::log_fields::fields;

use redlock_engine::LockError;

/// What a leader was doing when it logged an `L` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Its campaign just returned.
    Won,
    /// A step of its work, taken while the leadership said it was valid.
    Work,
    /// `Leadership::lost` resolved, with the error's word (`lost`, `not-owner`, `closed`, …).
    Lost(String),
    /// It resigned at the end of the run.
    Resigned,
}

impl Step {
    /// The step of a leadership whose `lost()` said `why`.
    pub fn lost(why: &LockError) -> Self {
        let word = match why {
            LockError::Lost => "lost",
            LockError::NotOwner => "not-owner",
            LockError::Closed => "closed",
            _ => "other",
        };
        Self::Lost(word.into())
    }

    /// Whether the leader stopped relying on its leadership with this step.
    pub fn ends(&self) -> bool {
        matches!(self, Self::Lost(_) | Self::Resigned)
    }

    fn code(&self) -> String {
        match self {
            Self::Won => "won".into(),
            Self::Work => "work".into(),
            Self::Lost(why) => format!("lost:{why}"),
            Self::Resigned => "resigned".into(),
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "won" => Some(Self::Won),
            "work" => Some(Self::Work),
            "resigned" => Some(Self::Resigned),
            _ => s
                .strip_prefix("lost:")
                .filter(|why| !why.is_empty())
                .map(|why| Self::Lost(why.into())),
        }
    }
}

/// One `L` line: a leader's claim at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lead {
    pub holder: String,
    pub term: u64,
    /// When its campaign returned.
    pub t1: u64,
    /// When it logged this line.
    pub at: u64,
    /// `Leadership::valid_until` then.
    pub vu: u64,
    pub step: Step,
}

impl Lead {
    /// The log line (with its newline).
    pub fn line(&self) -> String {
        format!(
            "L {} {} {} {} {} {}\n",
            self.holder,
            self.term,
            self.t1,
            self.at,
            self.vu,
            self.step.code()
        )
    }

    /// Parses an `L` line; `None` for any other or a truncated one.
    pub fn parse(line: &str) -> Option<Self> {
        let [holder, term, t1, at, vu, step] = fields(line, "L")?;
        Some(Self {
            holder: holder.to_string(),
            term: term.parse().ok()?,
            t1: t1.parse().ok()?,
            at: at.parse().ok()?,
            vu: vu.parse().ok()?,
            step: Step::parse(step)?,
        })
    }
}

/// One `O` line: a leader as an observer's stream gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub observer: String,
    pub term: u64,
    pub revision: u64,
    pub value: String,
    pub at: u64,
}

impl Observed {
    /// The log line (with its newline).
    pub fn line(&self) -> String {
        format!(
            "O {} {} {} {} {}\n",
            self.observer, self.term, self.revision, self.value, self.at
        )
    }

    /// Parses an `O` line; `None` for any other or a truncated one.
    pub fn parse(line: &str) -> Option<Self> {
        let [observer, term, revision, value, at] = fields(line, "O")?;
        Some(Self {
            observer: observer.to_string(),
            term: term.parse().ok()?,
            revision: revision.parse().ok()?,
            value: value.to_string(),
            at: at.parse().ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_lines_survive_the_round_trip() {
        for step in [
            Step::Won,
            Step::Work,
            Step::lost(&LockError::NotOwner),
            Step::Resigned,
        ] {
            let lead = Lead {
                holder: "e1".into(),
                term: 1_780_000_000_000_000,
                t1: 10,
                at: 20,
                vu: 30,
                step,
            };
            let line = lead.line();
            assert_eq!(Lead::parse(line.trim_end()), Some(lead));
            assert_eq!(Lead::parse(&line[..line.len() / 2]), None);
        }
        assert_eq!(Lead::parse("L e1 7 1 2 3 lost:"), None);
        let seen = Observed {
            observer: "o0".into(),
            term: 7,
            revision: 2,
            value: "e1".into(),
            at: 40,
        };
        let line = seen.line();
        assert_eq!(Observed::parse(line.trim_end()), Some(seen));
        assert_eq!(Observed::parse(&line[..line.len() - 4]), None);
    }
}
