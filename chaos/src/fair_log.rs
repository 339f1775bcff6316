//! The `F` log line of a fair acquire call (scenario 19): one per `acquire_fair` call, granted or not,
//! beside the `G` line of a granted one; written by [`crate::client::fair`], read by
//! [`crate::fairness`].
//!
//! `F holder resource t0 t1 end nodes timeout_ms attempts rounds` — the call's start and return (raw
//! `CLOCK_MONOTONIC` ns; for a cancelled call, when the cancel was decided, before the future was
//! dropped), how it ended ([`FairEnd`]), the engine's node count, its `acquire_timeout`, the attempts
//! the lock reported (`-` unless granted), and every enqueue or attempt round the engine decided during
//! the call, in order, as `t:yes:taken:gone:took` (`-` if none): when the round's tracing event was
//! seen, its counts of `G`, `Q` and `L` replies, and how long the round took (ns; see
//! [`crate::client::round_tap`]).

use crate::log_fields::fields;

/// How a fair acquire call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FairEnd {
    /// `ok`: the lock was returned.
    Granted,
    /// `timeout`: `LockError::Timeout`, the place given up at the wait's end.
    TimedOut,
    /// `cancelled`: the future was dropped at the stop (giving the place up).
    Cancelled,
    /// `failed`: any other error.
    Failed,
}

impl FairEnd {
    fn code(self) -> &'static str {
        match self {
            Self::Granted => "ok",
            Self::TimedOut => "timeout",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Self::Granted, Self::TimedOut, Self::Cancelled, Self::Failed]
            .into_iter()
            .find(|e| e.code() == s)
    }
}

/// One decided enqueue or attempt round of a fair acquire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    /// When its tracing event was seen: after every reply it counts.
    pub t: u64,
    /// Nodes that granted (`G`), that had the waiter queued but did not grant (`Q`), that did not have
    /// it (`L`).
    pub yes: u32,
    pub taken: u32,
    pub gone: u32,
    /// How long the round took (ns), by the engine's clock: it started at about `t - took`.
    pub took: u64,
}

/// One `acquire_fair` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FairCall {
    pub holder: String,
    pub resource: String,
    pub t0: u64,
    pub t1: u64,
    pub end: FairEnd,
    pub nodes: u32,
    pub timeout_ms: u64,
    /// `Lock::attempts` of a granted call.
    pub attempts: Option<u32>,
    pub rounds: Vec<Round>,
}

impl FairCall {
    /// The log line (with its newline).
    pub fn line(&self) -> String {
        let rounds: Vec<String> = self
            .rounds
            .iter()
            .map(|r| format!("{}:{}:{}:{}:{}", r.t, r.yes, r.taken, r.gone, r.took))
            .collect();
        format!(
            "F {} {} {} {} {} {} {} {} {}\n",
            self.holder,
            self.resource,
            self.t0,
            self.t1,
            self.end.code(),
            self.nodes,
            self.timeout_ms,
            self.attempts.map_or("-".into(), |a| a.to_string()),
            if rounds.is_empty() {
                "-".into()
            } else {
                rounds.join(",")
            },
        )
    }

    /// Parses an `F` line; `None` for any other or a malformed one.
    pub fn parse(line: &str) -> Option<Self> {
        let [holder, resource, t0, t1, end, nodes, timeout_ms, attempts, rounds] =
            fields(line, "F")?;
        let rounds = match rounds {
            "-" => Vec::new(),
            list => list.split(',').map(round).collect::<Option<_>>()?,
        };
        Some(Self {
            holder: holder.to_string(),
            resource: resource.to_string(),
            t0: t0.parse().ok()?,
            t1: t1.parse().ok()?,
            end: FairEnd::parse(end)?,
            nodes: nodes.parse().ok()?,
            timeout_ms: timeout_ms.parse().ok()?,
            attempts: match attempts {
                "-" => None,
                a => Some(a.parse().ok()?),
            },
            rounds,
        })
    }
}

fn round(s: &str) -> Option<Round> {
    let mut p = s.split(':').map(str::parse::<u64>);
    let mut next = || p.next()?.ok();
    let r = Round {
        t: next()?,
        yes: next()?.try_into().ok()?,
        taken: next()?.try_into().ok()?,
        gone: next()?.try_into().ok()?,
        took: next()?,
    };
    next().is_none().then_some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_survives_the_round_trip() {
        let mut call = FairCall {
            holder: "c1.2".into(),
            resource: "f0".into(),
            t0: 10,
            t1: 90,
            end: FairEnd::Granted,
            nodes: 5,
            timeout_ms: 4000,
            attempts: Some(2),
            rounds: vec![
                Round {
                    t: 20,
                    yes: 0,
                    taken: 5,
                    gone: 0,
                    took: 4,
                },
                Round {
                    t: 80,
                    yes: 3,
                    taken: 1,
                    gone: 1,
                    took: 6,
                },
            ],
        };
        let line = call.line();
        assert_eq!(FairCall::parse(line.trim_end()), Some(call.clone()));
        assert_eq!(FairCall::parse(&line[..line.len() / 2]), None);
        call.end = FairEnd::Cancelled;
        call.attempts = None;
        call.rounds.clear();
        assert_eq!(FairCall::parse(call.line().trim_end()), Some(call));
        assert_eq!(FairCall::parse("F a f0 1 2 ok 5 10 - 3:1:1:0"), None);
    }
}
