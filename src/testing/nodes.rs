//! [`MemoryNodes`]: a set of memory nodes for one test, and an engine on them.

use super::node::MemoryNode;
use crate::builder::Builder;
use crate::engine::Redlock;
use crate::error::LockError;

/// `n` independent memory nodes (see [`MemoryNode`]) for one test: the engine connects to them
/// with its real transport, as to Redis. Dropping this stops them.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use redlock_engine::testing::MemoryNodes;
///
/// let nodes = MemoryNodes::start(3).await?;
/// let redlock = nodes.redlock().await?;
/// let guard = redlock.lock("orders:42").ttl(Duration::from_secs(10)).await?;
/// assert!(guard.is_held().await?);
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct MemoryNodes {
    nodes: Vec<MemoryNode>,
}

impl MemoryNodes {
    /// Starts `n` nodes, each on a free port of `127.0.0.1`, on the current tokio runtime.
    ///
    /// # Errors
    /// A port could not be bound.
    pub async fn start(n: usize) -> std::io::Result<Self> {
        let mut nodes = Vec::with_capacity(n);
        for _ in 0..n {
            nodes.push(MemoryNode::launch().await?);
        }
        Ok(Self { nodes })
    }

    /// The nodes' URLs, for [`Config::nodes`](crate::Config::nodes) or [`Builder::nodes`].
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(MemoryNode::url).collect()
    }

    /// Node `i` (in [`urls`](Self::urls)' order), for its fault hooks.
    ///
    /// # Panics
    /// If `i` is not below the number of nodes.
    pub fn node(&self, i: usize) -> &MemoryNode {
        &self.nodes[i]
    }

    /// Every node, in [`urls`](Self::urls)' order.
    pub fn iter(&self) -> impl Iterator<Item = &MemoryNode> + '_ {
        self.nodes.iter()
    }

    /// A [`Builder`] for an engine on these nodes, with the crashed-node quarantine off: the nodes
    /// are only just started, and a quarantine would keep them from voting for `max_ttl`. Set it
    /// back on for a test of the quarantine itself.
    pub fn builder(&self) -> Builder {
        Redlock::builder().nodes(self.urls()).quarantine(false)
    }

    /// An engine on these nodes, as [`builder`](Self::builder) makes it.
    ///
    /// # Errors
    /// As [`Builder::build`].
    pub async fn redlock(&self) -> Result<Redlock, LockError> {
        self.builder().build().await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::MemoryNodes;
    use crate::error::LockError;

    /// The engine, unchanged, takes and gives back locks of every kind on three memory nodes: the
    /// handshake (scripts loaded, `INFO`), `SET NX PX`, the scripts, `TIME` for the clock guard.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_engine_locks_and_releases_on_three_memory_nodes() {
        let nodes = MemoryNodes::start(3).await.unwrap();
        let redlock = nodes.redlock().await.unwrap();
        let ttl = Duration::from_secs(10);

        let guard = redlock.lock("orders:42").ttl(ttl).once().await.unwrap();
        let key = b"redlock:{orders:42}";
        // The majority decides; the last node's answer may still be on its way.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let holding: Vec<bool> = nodes.iter().map(|n| n.get(key).is_some()).collect();
        assert_eq!(holding, [true; 3], "on every node");
        let busy = redlock.lock("orders:42").ttl(ttl).once().await.unwrap_err();
        assert!(matches!(busy, LockError::Contended { .. }), "{busy:?}");
        assert!(guard.is_held().await.unwrap());
        guard.release().await.unwrap();
        // As for the acquire: the release returns on a majority, the last node's may be on its way.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(nodes.iter().all(|n| n.get(key).is_none()), "released");

        let fenced = redlock
            .lock("ledger")
            .ttl(ttl)
            .fenced()
            .once()
            .await
            .unwrap();
        assert!(fenced.fencing_token().is_some());
        fenced.release().await.unwrap();
        let r1 = redlock.lock("doc").ttl(ttl).read().once().await.unwrap();
        let r2 = redlock.lock("doc").ttl(ttl).read().once().await.unwrap();
        let writer = redlock
            .lock("doc")
            .ttl(ttl)
            .write()
            .once()
            .await
            .unwrap_err();
        assert!(matches!(writer, LockError::Contended { .. }), "{writer:?}");
        r1.release().await.unwrap();
        r2.release().await.unwrap();
        let w = redlock.lock("doc").ttl(ttl).write().once().await.unwrap();
        w.release().await.unwrap();
        let permit = || redlock.lock("pool").ttl(ttl).permits(2).once();
        let p1 = permit().await.unwrap();
        let p2 = permit().await.unwrap();
        assert!(permit().await.is_err());
        p1.release().await.unwrap();
        p2.release().await.unwrap();
        let fair = redlock.lock("queue").ttl(ttl).fair().once().await.unwrap();
        fair.release().await.unwrap();
        let many = redlock.lock_many(["a", "b"]).ttl(ttl).once().await.unwrap();
        many.release().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await; // the last node's release, as above
        assert_eq!(
            nodes.node(0).keys(),
            [b"redlock:{ledger}:fence".to_vec()],
            "nothing left but the fence counter, which has no TTL"
        );
    }
}
