//! The `R` log line of a renewed lock (scenario 15): one per hold, beside its `G` line, written by
//! [`crate::client::renewed`] and read by the checker.
//!
//! `R holder resource t1 end vu renewals cause` — the acquire's return, when the holder stopped holding
//! (its release started, or it saw the lock lost), the lock's `valid_until` at that moment (raw ns),
//! the renewals the watchdog did, and the cause of a loss: `-` (not lost), `expired` (its validity
//! ended unrenewed) or `refused` (the watchdog gave it up with validity left: a majority said the key
//! was gone or someone else's).

use crate::log_fields::fields;

/// Why a renewed lock was lost, if it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// Held until released.
    None,
    /// The validity ended before a renewal won a majority.
    Expired,
    /// The watchdog declared it lost with validity left (refusals ruled out a majority).
    Refused,
}

impl Loss {
    fn code(self) -> &'static str {
        match self {
            Self::None => "-",
            Self::Expired => "expired",
            Self::Refused => "refused",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Self::None, Self::Expired, Self::Refused]
            .into_iter()
            .find(|l| l.code() == s)
    }
}

/// One renewed hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renewal {
    pub holder: String,
    pub resource: String,
    pub t1: u64,
    pub end: u64,
    pub vu: u64,
    pub renewals: u32,
    pub loss: Loss,
}

impl Renewal {
    /// The log line (with its newline).
    pub fn line(&self) -> String {
        format!(
            "R {} {} {} {} {} {} {}\n",
            self.holder,
            self.resource,
            self.t1,
            self.end,
            self.vu,
            self.renewals,
            self.loss.code()
        )
    }

    /// Parses an `R` line; `None` for any other or a truncated line.
    pub fn parse(line: &str) -> Option<Self> {
        let [holder, resource, t1, end, vu, renewals, loss] = fields(line, "R")?;
        Some(Self {
            holder: holder.to_string(),
            resource: resource.to_string(),
            t1: t1.parse().ok()?,
            end: end.parse().ok()?,
            vu: vu.parse().ok()?,
            renewals: renewals.parse().ok()?,
            loss: Loss::parse(loss)?,
        })
    }

    /// How long it had been held when it was lost (or released).
    pub fn age_ns(&self) -> u64 {
        self.end.saturating_sub(self.t1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renewal_survives_the_round_trip() {
        let r = Renewal {
            holder: "c0.17".into(),
            resource: "rn3".into(),
            t1: 10,
            end: 25,
            vu: 30,
            renewals: 4,
            loss: Loss::Refused,
        };
        let line = r.line();
        assert_eq!(Renewal::parse(line.trim_end()), Some(r.clone()));
        assert_eq!(Renewal::parse(&line[..line.len() / 2]), None);
        assert_eq!(r.age_ns(), 15);
    }
}
