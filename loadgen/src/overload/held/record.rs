//! [`HeldRecord`]: what one held run measured, filled by both engines' runs ([`super::redlock`],
//! [`super::rslock`]); one place for the hold's rates.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::engines::EngineKind;
use crate::overload::args::Spec;
use crate::overload::cpu::ServerCounters;

/// One engine's held run (every figure `None` when the engine has no watchdog).
#[derive(Debug, Clone, Serialize)]
pub struct HeldRecord {
    /// Engine name.
    pub engine: &'static str,
    /// How tables name it.
    pub label: String,
    /// Locks asked for.
    pub held: usize,
    /// TTL, ms.
    pub ttl_ms: u64,
    /// Renewal interval, ms.
    pub renew_every_ms: u64,
    /// Measured hold, seconds.
    pub hold_s: f64,
    /// Whether the engine can hold renewed locks (false: raw, every figure below null).
    pub supported: bool,
    /// Why not, when unsupported.
    pub note: Option<String>,
    /// Locks won.
    pub acquired: Option<u64>,
    /// Seconds the acquiring phase took.
    pub acquire_phase_s: Option<f64>,
    /// Locks lost by the end of the acquiring phase (renewals of the first ones run meanwhile).
    pub lost_while_acquiring: Option<u64>,
    /// Locks seen lost at any time up to the end of the hold.
    pub lost: Option<u64>,
    /// Locks lost at the end of the hold (`is_lost()`); below `lost` if a late renewal brought some back.
    pub lost_at_end: Option<u64>,
    /// Locks seen lost so far, sampled each second of the hold.
    pub lost_timeline: Vec<u64>,
    /// Renewals during the hold (sum of `renewals()` deltas).
    pub renewals: Option<u64>,
    /// `renewals / hold_s`.
    pub renewals_per_s: Option<f64>,
    /// What the policy asks for: `acquired / renew_every`.
    pub expected_renewals_per_s: Option<f64>,
    /// This process's CPU over the hold, seconds (getrusage, user + system).
    pub client_cpu_s: Option<f64>,
    /// `client_cpu_s / renewals`, µs.
    pub client_cpu_us_per_renewal: Option<f64>,
    /// The servers' CPU over the hold, seconds (INFO cpu, summed over the nodes).
    pub server_cpu_s: Option<f64>,
    /// `server_cpu_s / renewals`, µs (all nodes together).
    pub server_cpu_us_per_renewal: Option<f64>,
    /// EVALSHA calls over the hold, summed over the nodes.
    pub evalsha_calls: Option<u64>,
    /// Commands over the hold, summed over the nodes.
    pub server_commands: Option<u64>,
    /// Failures by cause, `acquire:<cause>` and `release:<cause>`.
    pub failures: BTreeMap<String, u64>,
    /// Releases that returned an error.
    pub failed_releases: Option<u64>,
    /// 1-minute load average at the start and the end of the hold.
    pub loadavg: [Option<f64>; 2],
}

impl HeldRecord {
    /// Fills in the hold phase's rates: `renewals` done by `held` locks renewed every `every` during
    /// `hold`, with the client's and the servers' CPU over it. One place for both engines' figures.
    pub(super) fn record_hold(
        &mut self,
        hold: Duration,
        renewals: u64,
        held: usize,
        every: Duration,
        cpu: Duration,
        servers: ServerCounters,
    ) {
        self.hold_s = hold.as_secs_f64();
        self.renewals = Some(renewals);
        self.renewals_per_s = Some(renewals as f64 / self.hold_s);
        self.expected_renewals_per_s = Some(held as f64 / every.as_secs_f64());
        let per_renewal = |s: f64| (renewals > 0).then(|| s * 1e6 / renewals as f64);
        self.client_cpu_s = Some(cpu.as_secs_f64());
        self.client_cpu_us_per_renewal = per_renewal(cpu.as_secs_f64());
        self.server_cpu_s = Some(servers.cpu_s);
        self.server_cpu_us_per_renewal = per_renewal(servers.cpu_s);
        self.evalsha_calls = Some(servers.evalsha_calls);
        self.server_commands = Some(servers.commands);
    }

    /// A record with no figures yet.
    pub fn empty(kind: EngineKind, label: String, held: usize, spec: &Spec) -> Self {
        Self {
            engine: kind.name(),
            label,
            held,
            ttl_ms: spec.held_ttl.as_millis() as u64,
            renew_every_ms: spec.renew_every.as_millis() as u64,
            hold_s: spec.hold_for.as_secs_f64(),
            supported: false,
            note: None,
            acquired: None,
            acquire_phase_s: None,
            lost_while_acquiring: None,
            lost: None,
            lost_at_end: None,
            lost_timeline: Vec::new(),
            renewals: None,
            renewals_per_s: None,
            expected_renewals_per_s: None,
            client_cpu_s: None,
            client_cpu_us_per_renewal: None,
            server_cpu_s: None,
            server_cpu_us_per_renewal: None,
            evalsha_calls: None,
            server_commands: None,
            failures: BTreeMap::new(),
            failed_releases: None,
            loadavg: [None, None],
        }
    }
}
