//! The options of the overload scenarios (`--scenario burst|held|overload`) and their
//! validation into a [`Spec`]. Flattened into [`crate::cli::Options`]; kept here so `cli.rs` only wires.

use std::time::Duration;

use clap::Args;

use crate::units::{parse_count, parse_duration};
use crate::workload::Scenario;

/// Options only the overload scenarios read.
#[derive(Args, Debug, Clone)]
pub struct OverloadArgs {
    /// burst: acquires started at once on distinct keys, each its own tokio task; a list (`10k,100k`) runs
    /// each in turn. Default: 10k.
    #[arg(long, value_delimiter = ',', value_parser = parse_count, value_name = "LIST")]
    pub burst: Vec<u64>,
    /// burst: bound on one acquire (the engine's `acquire_timeout`; loadgen cuts rslock's retry loop off
    /// at the same bound). The retry count is set high enough that this is the binding limit.
    #[arg(long, default_value = "120s", value_parser = parse_duration, value_name = "TIME")]
    pub acquire_timeout: Duration,
    /// held: renewed locks held at once; a list runs each in turn. Default: 10k.
    #[arg(long, value_delimiter = ',', value_parser = parse_count, value_name = "LIST")]
    pub held: Vec<u64>,
    /// held: how long every lock is held once all are acquired (the measured phase).
    #[arg(long, default_value = "60s", value_parser = parse_duration, value_name = "TIME")]
    pub hold_for: Duration,
    /// held: TTL of the held locks.
    #[arg(long, default_value = "3s", value_parser = parse_duration, value_name = "TIME")]
    pub held_ttl: Duration,
    /// held: renewal interval (`RenewPolicy::every`).
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "TIME")]
    pub renew_every: Duration,
    /// held: acquires (and releases) in flight at once while taking (and giving back) the locks.
    #[arg(long, default_value = "256", value_parser = parse_count, value_name = "N")]
    pub acquire_concurrency: u64,
    /// overload: workers on 1m distinct keys, run after (b) 64 workers for the ratio.
    #[arg(long, default_value = "10k", value_parser = parse_count, value_name = "N")]
    pub overload_workers: u64,
}

/// Which overload scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// B acquires at once.
    Burst,
    /// H renewed locks held.
    Held,
    /// W workers past capacity.
    Overload,
}

/// Validated overload options.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The scenario.
    pub kind: Kind,
    /// Burst sizes, in run order.
    pub bursts: Vec<usize>,
    /// Bound on one burst acquire.
    pub acquire_timeout: Duration,
    /// Held-lock counts, in run order.
    pub held: Vec<usize>,
    /// Measured hold.
    pub hold_for: Duration,
    /// TTL of held locks.
    pub held_ttl: Duration,
    /// Renewal interval.
    pub renew_every: Duration,
    /// Acquires in flight while taking the held locks.
    pub acquire_concurrency: usize,
}

/// Most locks a burst or a held run takes.
const MAX_LOCKS: u64 = 1_000_000;

impl OverloadArgs {
    /// Checks the options of `kind`; returns the spec and the ordinary scenarios to run with it: (b) for
    /// burst (goodput ratio), (b) and the overload scenario for overload, none for held.
    pub fn plan(&self, kind: Kind) -> Result<(Spec, Vec<Scenario>), String> {
        let sizes = |list: &[u64], flag: &str| -> Result<Vec<usize>, String> {
            let list = if list.is_empty() { &[10_000][..] } else { list };
            match list.iter().find(|&&n| n == 0 || n > MAX_LOCKS) {
                Some(n) => Err(format!("--{flag} {n}: must be between 1 and 1m")),
                None => Ok(list.iter().map(|&n| n as usize).collect()),
            }
        };
        if self.acquire_timeout.is_zero() {
            return Err("--acquire-timeout must be above zero".into());
        }
        if self.hold_for.is_zero() {
            return Err("--hold-for must be above zero".into());
        }
        if self.renew_every.is_zero() || self.renew_every >= self.held_ttl {
            return Err(format!(
                "--renew-every ({:?}) must be above zero and below --held-ttl ({:?})",
                self.renew_every, self.held_ttl
            ));
        }
        if self.acquire_concurrency == 0 {
            return Err("--acquire-concurrency must be at least 1".into());
        }
        if !(1..=100_000).contains(&self.overload_workers) {
            return Err("--overload-workers must be between 1 and 100k".into());
        }
        let spec = Spec {
            kind,
            bursts: sizes(&self.burst, "burst")?,
            acquire_timeout: self.acquire_timeout,
            held: sizes(&self.held, "held")?,
            hold_for: self.hold_for,
            held_ttl: self.held_ttl,
            renew_every: self.renew_every,
            acquire_concurrency: self.acquire_concurrency as usize,
        };
        let b = || Scenario::standard().swap_remove(1);
        let scenarios = match kind {
            Kind::Burst => vec![b()],
            Kind::Held => Vec::new(),
            Kind::Overload => vec![b(), overload_scenario(self.overload_workers as usize)],
        };
        Ok((spec, scenarios))
    }
}

/// W workers on a million keys: distinct keys, so every failure is the engine's own.
pub fn overload_scenario(workers: usize) -> Scenario {
    Scenario {
        id: "overload",
        label: format!("(overload) {workers} workers, distinct keys"),
        concurrency: workers,
        keys: 1_000_000,
    }
}

/// Retries for a burst acquire: enough that even back-to-back minimum pauses (`delay`) last longer than
/// `timeout`, so the acquire timeout, not the retry count, ends a starved acquire.
pub fn burst_retries(timeout: Duration, delay: Duration) -> u32 {
    let pause = delay.max(Duration::from_millis(1));
    let n = timeout.as_secs_f64() / pause.as_secs_f64();
    n.ceil().clamp(1.0, 1_000_000.0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_cover_the_timeout() {
        assert_eq!(
            burst_retries(Duration::from_secs(120), Duration::from_millis(50)),
            2400
        );
        assert_eq!(burst_retries(Duration::from_secs(1), Duration::ZERO), 1000);
    }
}
