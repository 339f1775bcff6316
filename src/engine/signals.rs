//! Signals for whoever is on call: one task per engine samples every node's link every
//! [`EVERY`] and says what changed — a node disconnected (warn) or connected (info), stopped
//! voting because it is young or restarted (warn: quarantine) or because its clock jumped (warn),
//! voting again (info) — and keeps the gauges `redlock_nodes_connected`, `redlock_nodes_voting` and
//! `redlock_background_releases_pending` current. Sampled, not hooked into each connection: a
//! quarantine ends by the clock, with no command to reveal it. At most [`EVERY`] late; costs one
//! look at each node's flags per tick.

use std::sync::Weak;
use std::time::Duration;

use super::core::Core;

/// How often the links are sampled.
pub(crate) const EVERY: Duration = Duration::from_millis(250);

/// What one node looked like at the last sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    connected: bool,
    votes: bool,
    jumped: bool,
}

/// Starts the sampler for `core` on the current runtime; it ends with the engine.
pub(crate) fn start(core: Weak<Core>) {
    tokio::spawn(async move {
        let mut last: Vec<Option<Seen>> = Vec::new();
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(core) = core.upgrade() else { return };
            sample(&core, &mut last);
        }
    });
}

fn sample(core: &Core, last: &mut Vec<Option<Seen>>) {
    let nodes = core.nodes();
    last.resize(nodes.len(), None);
    let (mut connected, mut voting) = (0usize, 0usize);
    for (index, (node, addr)) in nodes.iter().zip(&core.settings().nodes).enumerate() {
        let now = Seen {
            connected: node.is_connected(),
            votes: node.votes() && node.is_connected(),
            jumped: node.clock_jumped(),
        };
        connected += usize::from(now.connected);
        voting += usize::from(now.votes);
        let before = last[index].replace(now);
        // The first sample says only what is wrong: a healthy start is not news.
        let before = before.unwrap_or(Seen {
            connected: true,
            votes: true,
            jumped: false,
        });
        say(
            index,
            &addr.to_string(),
            before,
            now,
            node.status().last_error,
        );
    }
    let gauges = &core.metrics().gauges;
    gauges.nodes_connected.set(connected as f64);
    gauges.nodes_voting.set(voting as f64);
    let pending = core.release_retry().pending();
    gauges.releases_pending.set(pending as f64);
}

fn say(index: usize, node: &str, before: Seen, now: Seen, error: Option<crate::error::NodeError>) {
    if before.connected && !now.connected {
        let error = error.map(|e| e.to_string()).unwrap_or_default();
        tracing::warn!(index, node, %error, "node disconnected: it does not vote until it is back");
    } else if !before.connected && now.connected {
        tracing::info!(index, node, "node connected");
    }
    if !before.jumped && now.jumped {
        tracing::warn!(
            index,
            node,
            "node's wall clock jumped forward: not voting for max_ttl (it may have expired keys early)"
        );
    }
    // Connected, not silenced by its clock, and still not voting: the quarantine.
    let quarantined = |s: Seen| s.connected && !s.votes && !s.jumped;
    if !quarantined(before) && quarantined(now) {
        tracing::warn!(
            index,
            node,
            "node not voting: quarantined (up less than max_ttl, or restarted) until it has been up \
             for max_ttl"
        );
    }
    if !before.votes && now.votes {
        tracing::info!(index, node, "node votes again");
    }
}
