//! [`Redlock::nodes_status`]: each node's connection, vote and what the engine last learned of it,
//! read from the connections without sending anything.

use tokio::time::Instant;

use super::report::{NodeStatus, QuarantineState, ServerInfo};
use super::Redlock;

impl Redlock {
    /// Every node's state as this engine sees it now (configuration order): connected, voting,
    /// round-trip estimate, `run_id` and uptime as last read (and how long ago), quarantine and for
    /// how much longer, the clock guard's silence, the durable claim, the last connect or protocol
    /// error. Nothing is sent to the nodes; addresses carry no credentials.
    pub fn nodes_status(&self) -> Vec<NodeStatus> {
        let core = self.core();
        let now = Instant::now();
        core.nodes()
            .iter()
            .zip(&core.settings().nodes)
            .map(|(node, addr)| {
                let link = node.status();
                let view = link.quarantine;
                let quarantine = match &view {
                    None => QuarantineState::Off,
                    Some(v) if !v.on => QuarantineState::Off,
                    Some(v) if v.unidentified => QuarantineState::Unidentified,
                    Some(v) => match v.until {
                        Some(until) => QuarantineState::For(until.saturating_duration_since(now)),
                        None => QuarantineState::Clear,
                    },
                };
                let identity = view.and_then(|v| v.last).map(|(id, at)| ServerInfo {
                    run_id: id.run_id,
                    uptime: id.uptime,
                    read_ago: now.saturating_duration_since(at),
                    durable: id.durable,
                });
                NodeStatus {
                    node: addr.to_string(),
                    connected: link.connected,
                    votes: node.votes(),
                    rtt: node.rtt_smoothed(),
                    identity,
                    quarantine,
                    clock_silenced_for: link
                        .silenced_until
                        .map(|until| until.saturating_duration_since(now)),
                    durable_claim: addr.durable,
                    last_error: link.last_error,
                }
            })
            .collect()
    }
}
