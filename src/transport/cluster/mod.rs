//! Redis Cluster node sets on the engine's own pipelined connections: one persistent connection per
//! shard master (the same `PipelineNode` a standalone master gets: batching, bounded decoding, RTT,
//! backlog, coalesced releases, the clock guard, the handshake that loads every script), and a
//! router that sends each command to the master of its key's hash slot.
//!
//! Files: this one (the rules, [`ClusterNode`]), `node` (its `NodeClient` side), `router` (the slot
//! map's upkeep and the redirects), `map` (slot → shard), `topology` (`CLUSTER SHARDS` /
//! `CLUSTER SLOTS`, read with bounds).
//!
//! # Routing
//! A command goes to the shard that serves its first key's slot (CRC16 mod 16384 of the key's hash
//! tag; every key of one lock shares it: `crate::algo::keys`). A call's declared keys never span
//! slots: the watchdog extends one lock per call on a cluster (`batches()` is false), and a
//! coalesced release spans slots only with its keys undeclared, in `ARGV`, each checked by the
//! node as the script touches it (`pipeline/coalesce.rs`). The map is read at connect, every
//! 2 s, every 250 ms while a shard is down, and at once when a redirect names an unknown master.
//! Until one is read, every command fails with why no member gave one (a refused certificate, a
//! `NOPERM`), which the caller's error then names.
//!
//! # Why every resend is safe (a lock command is never replayed after it may have run)
//! - **`MOVED slot host:port`** comes from the server's dispatch before the command runs: it did not
//!   run. The router points the slot at that master and sends the command there, with the same
//!   waiters (the connection's reader does this, so a fire-and-forget release follows too).
//! - **`ASK slot host:port`** (a slot migrating, the key not on the source): did not run. Sent to
//!   the target as `ASKING` + the command, back to back under one lock on that connection, so no
//!   command comes between them (a clock-guard `TIME` goes before the `ASKING`). The map is not
//!   changed: the source keeps the slot until the migration ends. An `ASKING` the target refuses (a
//!   lock user without `+asking`) leaves the command unflagged, so the target answers `MOVED` back to
//!   the source: it did not run, and it fails with the refusal instead of bouncing to the hop bound.
//! - **`TRYAGAIN`** (a multi-key command whose keys a migration split): did not run. Sent again
//!   10 ms later where the map then says.
//! - **`NOSCRIPT`**: did not run; as on a standalone node (resent once as `EVAL` on the same
//!   connection, owner-checked scripts only).
//! - **A lost connection** fails the commands in flight on it (`ConnectionLost`), as on a standalone
//!   node: they may have run, so they are never sent anywhere again.
//! - **Bounded**: a command follows at most [`router::MAX_REDIRECTS`] redirects, then its vote fails
//!   with the last one's message. A redirect to a master the map does not know fails the vote at once
//!   (`Disconnected`; releases are re-sent by the engine's re-sender) and triggers a topology read.
//!
//! Redis moves a key during resharding with `MIGRATE` (atomic, TTL kept), and `ASK` sends a command
//! to the target only for a key not (or no longer) on the source: one copy of each lock key exists at
//! any time, so resharding cannot grant a lock twice, lose a release or extend the wrong key.
//!
//! # Votes and quarantine per shard
//! The node set is one vote per lock, but whether it counts is decided by the shard the command is
//! routed to (`NodeClient::route`): the fan-out reads that shard's `votes()`, clock guard and last
//! reply, exactly as it reads a standalone node's. So a shard that restarted (new `run_id`), is
//! young, whose clock jumped, or that is down suspends only the locks whose keys live in its slots;
//! locks in other shards keep the set's vote. A command routed to a quarantined shard is still sent
//! (a `SET` must be releasable) and counted as a failure. A reply that came through a redirect from
//! another shard counts only if that shard votes when the reply arrives (`pipeline/redirect.rs`).
//!
//! A master that was not a master in the previous map and was ever listed as a replica, or serves
//! slots at once (a failover hands a promoted replica its master's slots), may lack writes its
//! predecessor acknowledged, whatever its uptime: its connection is quarantined for one maximum
//! lifetime before anything is routed to it. A master that gains slots by resharding is not (its
//! keys arrived by `MIGRATE`), nor a master first seen with no slots that was never a replica (a
//! node just added; it is judged by its uptime like any node, so a node younger than `max_ttl` gives
//! no vote for the keys migrated to it yet). Slots handed to a master
//! with `CLUSTER SETSLOT ... NODE` without migrating their keys would lose them unseen: reshard with
//! `MIGRATE` (as `redis-cli --cluster reshard` does). With quarantine off, nothing is quarantined.
//!
//! Not here: Valkey's native commands (a native form's follow-up commands are not redirect-safe),
//! so shard connections render the scripts; `?durable=true` (refused for clusters by `addr`).

mod map;
mod node;
mod router;
mod topology;

use std::sync::Arc;

use crate::addr::NodeAddr;
use router::Router;

use super::ConnectOptions;

/// A Redis Cluster node set: one vote, carried by one pipelined connection per shard master.
/// Dropping it closes every connection and stops the topology reads.
#[derive(Debug)]
pub(crate) struct ClusterNode {
    router: Arc<Router>,
}

impl ClusterNode {
    /// Reads the slot map and connects to every master, waiting at most about twice
    /// `connect_timeout`; if no member answers, starts empty and keeps reading in the background.
    pub(crate) async fn connect(addr: NodeAddr, opts: &ConnectOptions) -> Self {
        let opts = ConnectOptions {
            // See the module doc: shard connections render the scripts.
            native: false,
            ..opts.clone()
        };
        let bound = opts.connect_timeout.saturating_mul(2);
        let router = Router::new(addr, opts);
        let _ = tokio::time::timeout(bound, router.refresh()).await;
        tokio::spawn(Router::watch(
            Arc::downgrade(&router),
            router.shutdown.clone(),
        ));
        Self { router }
    }
}

impl Drop for ClusterNode {
    fn drop(&mut self) {
        self.router.shutdown.cancel();
    }
}

#[cfg(test)]
mod tests;
