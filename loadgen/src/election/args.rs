//! The options of `--scenario election` (`--trials`, `--election-ttl`, `--elections`, …) and their
//! validation into a [`Spec`]. Flattened into [`crate::cli::Options`], as the overload scenarios'
//! options are; the hidden `--election-child` makes a process one candidate or observer of a run.

use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::units::{parse_count, parse_duration};

/// Options only the election scenario reads.
#[derive(Args, Debug, Clone)]
pub struct ElectionArgs {
    /// election: failover trials — the leader's process killed with `kill -9`, timed until another
    /// candidate's campaign returns.
    #[arg(long, default_value = "50", value_parser = parse_count, value_name = "N")]
    pub trials: u64,
    /// election: the election's TTL: a killed leader's key stays until it runs out from the last
    /// renewal, so failover is about this long.
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "TIME")]
    pub election_ttl: Duration,
    /// election: observer processes following `observe()`; each item's arrival is timed from the
    /// new leader's campaign returning.
    #[arg(long, default_value = "2", value_parser = parse_count, value_name = "N")]
    pub observers: u64,
    /// election: elections held at once in one process for the holding cost, beside as many renewed
    /// locks and idle nodes.
    #[arg(long, default_value = "1000", value_parser = parse_count, value_name = "N")]
    pub elections: u64,
    /// election: how long each holding-cost phase (idle, renewed locks, elections) is measured.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "TIME")]
    pub cost_for: Duration,
    /// Internal: run as one candidate or observer process of an election run.
    #[arg(long, hide = true, value_enum, requires = "election_name")]
    pub election_child: Option<Role>,
    /// Internal: the election a child takes part in.
    #[arg(long, hide = true, value_name = "NAME")]
    pub election_name: Option<String>,
}

/// What a child process of an election run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// Campaigns until elected, then holds the leadership until killed.
    Candidate,
    /// Follows `observe()` and reports each item.
    Observer,
}

impl Role {
    /// The `--election-child` value that selects it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Candidate => "candidate",
            Self::Observer => "observer",
        }
    }
}

/// Validated election options.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Failover trials.
    pub trials: usize,
    /// The election TTL (the held locks of the cost phase get the same).
    pub ttl: Duration,
    /// Observer processes.
    pub observers: usize,
    /// Elections (and renewed locks) held at once for the cost.
    pub elections: usize,
    /// Each cost phase's measured time.
    pub cost_for: Duration,
    /// Set in a child process: its role and the election's name.
    pub child: Option<(Role, String)>,
}

/// Most failover trials (each takes about two TTLs).
const MAX_TRIALS: u64 = 10_000;
/// Most observer processes (each is a process on the machine being measured).
const MAX_OBSERVERS: u64 = 16;
/// Most elections held at once.
const MAX_ELECTIONS: u64 = 100_000;

impl ElectionArgs {
    /// Checks the options; the error is one line for the user.
    pub fn plan(&self) -> Result<Spec, String> {
        if !(1..=MAX_TRIALS).contains(&self.trials) {
            return Err(format!("--trials must be between 1 and {MAX_TRIALS}"));
        }
        if self.election_ttl < Duration::from_millis(100)
            || !self.election_ttl.subsec_nanos().is_multiple_of(1_000_000)
        {
            return Err("--election-ttl must be whole milliseconds, at least 100ms".into());
        }
        if self.observers > MAX_OBSERVERS {
            return Err(format!("--observers must be at most {MAX_OBSERVERS}"));
        }
        if !(1..=MAX_ELECTIONS).contains(&self.elections) {
            return Err("--elections must be between 1 and 100k".into());
        }
        if self.cost_for < Duration::from_millis(100) {
            return Err("--cost-for must be at least 100ms".into());
        }
        Ok(Spec {
            trials: self.trials as usize,
            ttl: self.election_ttl,
            observers: self.observers as usize,
            elections: self.elections as usize,
            cost_for: self.cost_for,
            child: self.election_child.zip(self.election_name.clone()),
        })
    }
}
