//! Replication: [`replica_of`] (a node that syncs from a master), and [`SentinelSet`] (a master, one
//! replica of it, and one Sentinel watching them). Every process is stopped by pid, and every directory
//! removed, when its owner is dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::dir::TempDir;
use crate::node::{NodeSpec, RedisNode};
use crate::port::free_port;
use crate::resp;

/// Starts a replica of `master` (with `extra` arguments too) and waits until its link is up.
///
/// Its full sync writes `dump.rdb` into the replica's own directory, removed with it.
///
/// # Panics
/// If the replica does not sync within 10 s.
pub fn replica_of(master: &RedisNode, extra: &[&str]) -> RedisNode {
    let mut spec = NodeSpec::with_args(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
    spec.args.extend(extra.iter().map(|a| a.to_string()));
    let replica = RedisNode::start_spec(spec);
    let until = Instant::now() + Duration::from_secs(10);
    while !replica
        .cmd(&[b"INFO", b"replication"])
        .contains("master_link_status:up")
    {
        assert!(Instant::now() < until, "replica did not sync");
        std::thread::sleep(Duration::from_millis(50));
    }
    replica
}

/// A master, one replica of it, and one Sentinel watching them under the service name `locks`
/// (quorum 1, master declared down after 1 s).
#[derive(Debug)]
pub struct SentinelSet {
    /// The master at the start (the Sentinel may promote the replica later).
    pub master: RedisNode,
    /// Its replica.
    pub replica: RedisNode,
    /// The Sentinel's port.
    pub sentinel_port: u16,
    sentinel: Child,
    /// `sentinel.conf` (the Sentinel rewrites it).
    _dir: TempDir,
}

impl SentinelSet {
    /// Starts the three processes; returns once the Sentinel has found the replica.
    ///
    /// # Panics
    /// If a process does not start, or the Sentinel does not find the replica within 15 s.
    pub fn start() -> Self {
        let master = RedisNode::start();
        let replica = replica_of(&master, &[]);
        let dir = TempDir::new("sentinel");
        let sentinel_port = free_port();
        let conf = dir.path().join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {sentinel_port}\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\n\
                 dir {}\n\
                 sentinel monitor locks 127.0.0.1 {} 1\n\
                 sentinel down-after-milliseconds locks 1000\n\
                 sentinel failover-timeout locks 10000\n",
                dir.path().display(),
                master.port
            ),
        )
        .unwrap();
        let sentinel = Command::new("redis-server")
            .arg(&conf)
            .arg("--sentinel")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server --sentinel");
        let set = Self {
            master,
            replica,
            sentinel_port,
            sentinel,
            _dir: dir,
        };
        // Ready once the Sentinel has found the replica (it may be promoted only then).
        let replica_port = set.replica.port.to_string();
        let until = Instant::now() + Duration::from_secs(15);
        while !set
            .sentinel_cmd(&["SENTINEL", "REPLICAS", "locks"])
            .is_some_and(|r| r.contains(&replica_port))
        {
            assert!(Instant::now() < until, "sentinel did not find the replica");
            std::thread::sleep(Duration::from_millis(100));
        }
        set
    }

    /// `redis-sentinel://127.0.0.1:port?sentinelServiceName=locks`.
    pub fn url(&self) -> String {
        format!(
            "redis-sentinel://127.0.0.1:{}?sentinelServiceName=locks",
            self.sentinel_port
        )
    }

    /// The port of the master the Sentinel names now.
    pub fn master_port(&self) -> Option<u16> {
        let reply = self.sentinel_cmd(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "locks"])?;
        // `127.0.0.1 7001`: the port is the last word.
        reply.split_whitespace().last()?.parse().ok()
    }

    /// One command to the Sentinel; the reply as text ([`resp::parse`]).
    fn sentinel_cmd(&self, args: &[&str]) -> Option<String> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        resp::command(self.sentinel_port, &args, Duration::from_millis(500))
    }
}

impl Drop for SentinelSet {
    fn drop(&mut self) {
        let _ = self.sentinel.kill();
        let _ = self.sentinel.wait();
    }
}
