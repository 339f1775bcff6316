//! [`RedisCluster`]: a local Redis Cluster of masters without replicas, slots spread evenly by
//! `redis-cli --cluster create`. Every member is a [`RedisNode`] (a data directory of its own, stopped
//! by pid when dropped).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::dir::TempDir;
use crate::free_port;
use crate::node::{NodeSpec, RedisNode};

/// The running cluster.
#[derive(Debug)]
pub struct RedisCluster {
    /// The masters, in the order given to `--cluster create`.
    pub members: Vec<RedisNode>,
    /// The members' `nodes-<port>.conf` files.
    _conf: TempDir,
}

impl RedisCluster {
    /// Starts `masters` members and creates the cluster; waits until every member says
    /// `cluster_state:ok`.
    ///
    /// # Panics
    /// If a member cannot start, `redis-cli` (Debian package redis-tools) is missing or fails, or the
    /// cluster does not converge within 20 s.
    pub fn start(masters: usize) -> Self {
        let conf = TempDir::new("cluster");
        let members: Vec<RedisNode> = (0..masters)
            .map(|_| {
                for _ in 0..20 {
                    let port = free_port();
                    let file = conf.path().join(format!("nodes-{port}.conf"));
                    let spec = NodeSpec::with_args(&[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        &file.to_string_lossy(),
                        "--cluster-node-timeout",
                        "1000",
                        // The other masters keep serving their slots while one is down.
                        "--cluster-require-full-coverage",
                        "no",
                    ]);
                    if let Some(node) = RedisNode::try_start_on(port, spec) {
                        return node;
                    }
                }
                panic!("could not start a cluster member");
            })
            .collect();
        let addrs: Vec<String> = members.iter().map(RedisNode::addr).collect();
        let status = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli (Debian package redis-tools) is needed for the cluster tests");
        assert!(status.success(), "redis-cli --cluster create failed");
        let cluster = Self {
            members,
            _conf: conf,
        };
        cluster.wait_ok(Duration::from_secs(20));
        cluster
    }

    /// Waits until every running member says `cluster_state:ok`.
    ///
    /// # Panics
    /// If that takes longer than `within`.
    pub fn wait_ok(&self, within: Duration) {
        let until = Instant::now() + within;
        loop {
            let ok = self
                .members
                .iter()
                .filter(|m| m.pid().is_some())
                .all(|m| m.cmd(&[b"CLUSTER", b"INFO"]).contains("cluster_state:ok"));
            if ok {
                return;
            }
            assert!(Instant::now() < until, "cluster did not converge");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `redis-cluster://first?node=second&node=third`.
    pub fn url(&self) -> String {
        let mut url = format!("redis-cluster://{}", self.members[0].addr());
        for (i, m) in self.members.iter().enumerate().skip(1) {
            url.push(if i == 1 { '?' } else { '&' });
            url.push_str(&format!("node={}", m.addr()));
        }
        url
    }

    /// The member that serves `key`'s slot (the one that does not answer MOVED).
    pub fn owner_of(&self, key: &[u8]) -> usize {
        self.members
            .iter()
            .position(|m| !m.cmd(&[b"GET", key]).starts_with("MOVED"))
            .expect("some member owns every slot")
    }
}
