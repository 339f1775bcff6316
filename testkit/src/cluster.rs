//! [`RedisCluster`]: a local Redis Cluster, slots spread evenly over its masters by
//! `redis-cli --cluster create`, optionally with replicas; `CLUSTER FAILOVER` and role look-ups; ACL
//! users on every member; over TLS ([`RedisCluster::start_tls`], what TLS adds to a member in
//! `cluster_tls`). Every member is a [`RedisNode`] (a data directory of its own, stopped by pid when
//! dropped). Slot migration is in `reshard`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cluster_tls::{Tls, TlsFiles};
use crate::dir::TempDir;
use crate::node::{NodeSpec, RedisNode};
use crate::port::free_port;

/// The running cluster.
#[derive(Debug)]
pub struct RedisCluster {
    /// Every member, in the order given to `--cluster create`: the masters first, then the replicas
    /// (their roles change with failovers: see [`RedisCluster::is_master`]).
    pub members: Vec<RedisNode>,
    /// A TLS cluster's files and each member's TLS port (`cluster_tls`); `None` for plain text.
    pub(crate) tls: Option<Tls>,
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
        Self::start_with_replicas(masters, 0)
    }

    /// [`RedisCluster::start`] with `replicas` replicas per master (members `masters..`), each
    /// replicating from a master picked by `redis-cli`; waits until every replica is in sync.
    ///
    /// # Panics
    /// As [`RedisCluster::start`].
    pub fn start_with_replicas(masters: usize, replicas: usize) -> Self {
        Self::create(masters, replicas, None)
    }

    /// Starts the members (TLS ones with `tls`), creates the cluster through the ports clients use
    /// (the TLS ports with `redis-cli --tls` for a TLS cluster: its cluster bus then listens on the
    /// TLS port + 10000) and waits as [`RedisCluster::start_with_replicas`] says.
    pub(crate) fn create(masters: usize, replicas: usize, tls: Option<&TlsFiles>) -> Self {
        let conf = TempDir::new("cluster");
        let (members, tls_ports): (Vec<RedisNode>, Vec<Option<u16>>) = (0..masters
            * (1 + replicas))
            .map(|_| member(&conf, tls))
            .unzip();
        let cluster = Self {
            members,
            tls: tls.map(|files| Tls {
                files: files.clone(),
                ports: tls_ports.into_iter().flatten().collect(),
            }),
            _conf: conf,
        };
        let addrs: Vec<String> = (0..cluster.members.len())
            .map(|i| format!("127.0.0.1:{}", cluster.client_port(i)))
            .collect();
        let status = Command::new("redis-cli")
            .args(cluster.tls.as_ref().map(Tls::cli_args).unwrap_or_default())
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli (Debian package redis-tools) is needed for the cluster tests");
        assert!(status.success(), "redis-cli --cluster create failed");
        cluster.wait_ok(Duration::from_secs(20));
        let synced = |m: &RedisNode| {
            m.cmd_str(&["INFO", "replication"])
                .contains("master_link_status:up")
        };
        let until = Instant::now() + Duration::from_secs(20);
        while !cluster.members[masters..].iter().all(synced) {
            assert!(Instant::now() < until, "replicas did not sync");
            std::thread::sleep(Duration::from_millis(50));
        }
        cluster
    }

    /// Starts one more member, an empty master (no slots), and introduces it (`CLUSTER MEET`);
    /// waits until every member knows it. Returns its index.
    ///
    /// # Panics
    /// If it cannot start or the cluster does not learn of it within 20 s.
    pub fn add_master(&mut self) -> usize {
        let (node, tls_port) = member(&self._conf, self.tls.as_ref().map(|t| &t.files));
        // The port its cluster bus is derived from: the TLS port on a TLS cluster.
        let port = tls_port.unwrap_or(node.port).to_string();
        assert_eq!(
            self.members[0].cmd_str(&["CLUSTER", "MEET", "127.0.0.1", &port]),
            "OK"
        );
        if let (Some(tls), Some(tls_port)) = (self.tls.as_mut(), tls_port) {
            tls.ports.push(tls_port);
        }
        self.members.push(node);
        // `CLUSTER NODES` on a plain connection names the plain port.
        let needle = format!(":{}@", self.members.last().map_or(0, |m| m.port));
        let until = Instant::now() + Duration::from_secs(20);
        while !self.members.iter().all(|m| {
            m.try_cmd(&[b"CLUSTER", b"NODES"])
                .is_some_and(|n| n.contains(&needle) && !n.contains("handshake"))
        }) {
            assert!(Instant::now() < until, "the new master did not join");
            std::thread::sleep(Duration::from_millis(50));
        }
        self.wait_ok(Duration::from_secs(20));
        self.members.len() - 1
    }

    /// Whether member `index` is a master now (`INFO replication`).
    pub fn is_master(&self, index: usize) -> bool {
        self.members[index]
            .try_cmd(&[b"INFO", b"replication"])
            .is_some_and(|info| info.contains("role:master"))
    }

    /// The member replicating from member `master`, if any.
    pub fn replica_of(&self, master: usize) -> Option<usize> {
        let port = format!("master_port:{}", self.members[master].port);
        (0..self.members.len()).find(|&i| {
            i != master
                && self.members[i]
                    .try_cmd(&[b"INFO", b"replication"])
                    .is_some_and(|info| info.contains(&port))
        })
    }

    /// `CLUSTER FAILOVER` on `replica` (with `FORCE` when its master is down), then waits until
    /// every running member says `cluster_state:ok` with `replica` a master.
    ///
    /// # Panics
    /// If the failover does not complete within 20 s.
    pub fn failover(&self, replica: usize, force: bool) {
        let mut args: Vec<&[u8]> = vec![b"CLUSTER", b"FAILOVER"];
        if force {
            args.push(b"FORCE");
        }
        assert_eq!(self.members[replica].cmd(&args), "OK", "CLUSTER FAILOVER");
        let until = Instant::now() + Duration::from_secs(20);
        while !self.is_master(replica) {
            assert!(Instant::now() < until, "failover did not complete");
            std::thread::sleep(Duration::from_millis(50));
        }
        self.wait_ok(Duration::from_secs(20));
    }

    /// Waits until member `replica` has been promoted by the cluster itself (its master died).
    ///
    /// # Panics
    /// If that takes longer than `within`.
    pub fn wait_promoted(&self, replica: usize, within: Duration) {
        let until = Instant::now() + within;
        while !self.is_master(replica) {
            assert!(Instant::now() < until, "replica was not promoted");
            std::thread::sleep(Duration::from_millis(50));
        }
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

    /// `redis-cluster://first?node=second&node=third`: every member (`rediss-cluster://` and their
    /// TLS ports for a TLS cluster).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() {
            "rediss-cluster"
        } else {
            "redis-cluster"
        };
        let mut url = format!("{scheme}://127.0.0.1:{}", self.client_port(0));
        for i in 1..self.members.len() {
            url.push(if i == 1 { '?' } else { '&' });
            url.push_str(&format!("node=127.0.0.1:{}", self.client_port(i)));
        }
        url
    }

    /// `ACL SETUSER name rules...` on every running member (e.g. `on`, `>password`, `~redlock:*`,
    /// `+set`): a cluster does not share ACL users, each server has its own. A member added or
    /// restarted later does not have it (nothing persists).
    ///
    /// # Panics
    /// If a member refuses the rules (its answer is in the message).
    pub fn acl_setuser(&self, name: &str, rules: &[&str]) {
        let mut args = vec!["ACL", "SETUSER", name];
        args.extend(rules);
        for (i, m) in self.members.iter().enumerate() {
            if m.pid().is_some() {
                assert_eq!(m.cmd_str(&args), "OK", "ACL SETUSER on member {i}");
            }
        }
    }

    /// The member that serves `key`'s slot (a running master that does not answer MOVED).
    pub fn owner_of(&self, key: &[u8]) -> usize {
        (0..self.members.len())
            .find(|&i| {
                self.is_master(i)
                    && self.members[i]
                        .try_cmd(&[b"GET", key])
                        .is_some_and(|r| !r.starts_with("MOVED"))
            })
            .expect("some member owns every slot")
    }

    /// `key`'s hash slot (`CLUSTER KEYSLOT`, asked of the first running member).
    pub fn slot_of(&self, key: &[u8]) -> u16 {
        let member = self
            .members
            .iter()
            .find(|m| m.pid().is_some())
            .expect("a running member");
        member
            .cmd(&[b"CLUSTER", b"KEYSLOT", key])
            .parse()
            .expect("a slot number")
    }

    /// How many MOVED and ASK replies member `index` has sent (`INFO errorstats`).
    pub fn redirects_sent(&self, index: usize) -> (u64, u64) {
        let info = self.members[index].cmd_str(&["INFO", "errorstats"]);
        let count = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("errorstat_{name}:count=")))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0)
        };
        (count("MOVED"), count("ASK"))
    }

    /// [`RedisCluster::start`] over TLS: `masters` members, each with a TLS port, TLS on the cluster
    /// bus and for replication, created with `redis-cli --tls`. [`RedisCluster::url`] is then
    /// `rediss-cluster://` with the TLS ports.
    ///
    /// # Panics
    /// As [`RedisCluster::start`]; also if the server was built without TLS (see
    /// [`crate::server::skip_unless`]) or a file cannot be read.
    pub fn start_tls(masters: usize, files: &TlsFiles) -> Self {
        Self::create(masters, 0, Some(files))
    }

    /// Member `index`'s TLS port; `None` on a plain-text cluster.
    pub fn tls_port(&self, index: usize) -> Option<u16> {
        self.tls.as_ref().map(|t| t.ports[index])
    }

    /// The port clients reach member `index` on: its TLS port on a TLS cluster, else its port.
    pub fn client_port(&self, index: usize) -> u16 {
        self.tls_port(index).unwrap_or(self.members[index].port)
    }
}

/// One cluster-enabled server on a free port, its `nodes-<port>.conf` in `conf`; with `tls`, also
/// on a TLS port of its own (returned), which the cluster bus and replication use too.
fn member(conf: &TempDir, tls: Option<&TlsFiles>) -> (RedisNode, Option<u16>) {
    for _ in 0..20 {
        let port = free_port();
        let file = conf.path().join(format!("nodes-{port}.conf"));
        let mut spec = NodeSpec::with_args(&[
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
        let tls_port = tls.map(|files| {
            let tls_port = free_port();
            spec.args.extend(files.member_args(tls_port));
            tls_port
        });
        // A taken port (the plain one, the TLS one or a bus port) stops the server: try others.
        if let Some(node) = RedisNode::try_start_on(port, spec) {
            return (node, tls_port);
        }
    }
    panic!("could not start a cluster member");
}
