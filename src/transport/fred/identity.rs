//! Feeding the crashed-node quarantine from fred's connection events.
//!
//! fred reconnects on its own, so a server's identity (`INFO server`) is read after the fact: a drop
//! suspends the node's vote at once, and it comes back only once the new connection's identity has
//! been read and passes the quarantine. What is watched depends on what stands behind the node:
//! - one master, or the master Sentinels name: its `run_id` and uptime. After a Sentinel failover
//!   fred reconnects to the promoted replica, whose `run_id` differs: the node waits out one maximum
//!   lock lifetime, because the replica may not have received the latest lock writes.
//! - a Redis Cluster: every master's `run_id` and uptime (read from that master), and the topology.
//!   A master removed, or one added that was never seen (a failover, a reshard), quarantines the whole
//!   node set for one maximum lifetime, for the same reason; a master restarted in place is caught by
//!   its `run_id` and uptime. A dropped master suspends the whole set until it is read again: the
//!   vote is one per node set, not per slot.

use std::sync::Arc;

use ::fred::prelude::{
    Client, ClientLike, ClusterInterface, Error as FredError, EventInterface, Server, Value,
};
use ::fred::types::{ClusterStateChange, InfoKind};

use crate::algo::quarantine::Quarantine;
use crate::protocol::server::parse_info;

type Listener = tokio::task::JoinHandle<Result<(), FredError>>;

/// Starts the listeners that keep `quarantine` current; abort them when the node goes.
pub(super) fn watch(
    client: &Client,
    quarantine: &Arc<Quarantine>,
    clustered: bool,
) -> Vec<Listener> {
    let member = move |server: Option<&Server>| match (clustered, server) {
        (true, Some(server)) => server.to_string(),
        // A cluster error without a server: hold the whole set back under a name no member has.
        (true, None) => "?".to_string(),
        (false, _) => String::new(),
    };
    let mut listeners = Vec::new();
    let q = quarantine.clone();
    listeners.push(client.on_error(move |(_, server)| {
        q.suspend_member(&member(server.as_ref()));
        async { Ok(()) }
    }));
    let (q, c) = (quarantine.clone(), client.clone());
    listeners.push(client.on_reconnect(move |server| {
        let (q, c) = (q.clone(), c.clone());
        async move {
            if clustered {
                read_member(&c, &q, &server).await;
                q.forget_member("?");
            } else {
                read_identity(&c, &q).await;
            }
            Ok(())
        }
    }));
    if clustered {
        let q = quarantine.clone();
        listeners.push(client.on_cluster_change(move |changes| {
            for change in &changes {
                match change {
                    // A master we never saw (a promoted replica, a new shard) may lack recent
                    // writes; a known one coming back is judged by its identity.
                    ClusterStateChange::Add(server) => q.on_member_added(&server.to_string()),
                    ClusterStateChange::Remove(server) => {
                        q.forget_member(&server.to_string());
                        q.quarantine_now();
                    }
                    // Slots moved between known masters carry their keys (MIGRATE).
                    ClusterStateChange::Rebalance => {}
                }
            }
            async { Ok(()) }
        }));
    }
    listeners
}

/// Reads the identity of every server behind the node, after the first connect.
pub(super) async fn read_all(client: &Client, quarantine: &Quarantine, clustered: bool) {
    if !clustered {
        return read_identity(client, quarantine).await;
    }
    let primaries = client
        .cached_cluster_state()
        .map(|state| state.unique_primary_nodes())
        .unwrap_or_default();
    for server in primaries {
        read_member(client, quarantine, &server).await;
    }
}

/// Reads `INFO server` and feeds the quarantine; a node that will not say who it is stays as it was.
async fn read_identity(client: &Client, quarantine: &Quarantine) {
    if let Ok(Value::String(info)) = client.info::<Value>(Some(InfoKind::Server)).await {
        if let Some(identity) = parse_info(info.as_bytes()).map(|i| i.identity) {
            quarantine.on_connect(&identity);
        }
    }
}

/// [`read_identity`] for one cluster member, asked directly.
async fn read_member(client: &Client, quarantine: &Quarantine, server: &Server) {
    let info = client
        .with_cluster_node(server.clone())
        .info::<Value>(Some(InfoKind::Server))
        .await;
    if let Ok(Value::String(info)) = info {
        if let Some(identity) = parse_info(info.as_bytes()).map(|i| i.identity) {
            quarantine.on_member_connect(&server.to_string(), &identity);
        }
    }
}
