//! Node sets made of several servers, started by the tests: a local Redis Cluster, and a master with a
//! replica watched by a Sentinel. Every process is stopped (by pid) when its owner is dropped.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{free_port, RedisNode};

/// A throwaway directory for configuration files, removed on drop.
#[derive(Debug)]
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "redlock-{what}-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A local Redis Cluster of masters without replicas, slots spread evenly by `redis-cli --cluster create`.
#[derive(Debug)]
pub struct RedisCluster {
    pub members: Vec<RedisNode>,
    _dir: TempDir,
}

impl RedisCluster {
    pub fn start(masters: usize) -> Self {
        let dir = TempDir::new("cluster");
        let members: Vec<RedisNode> = (0..masters)
            .map(|_| {
                for _ in 0..20 {
                    let port = free_port();
                    let conf = dir.0.join(format!("nodes-{port}.conf"));
                    let extra = [
                        "--cluster-enabled".to_string(),
                        "yes".into(),
                        "--cluster-config-file".into(),
                        conf.to_string_lossy().into_owned(),
                        "--cluster-node-timeout".into(),
                        "1000".into(),
                        // The other masters keep serving their slots while one is down.
                        "--cluster-require-full-coverage".into(),
                        "no".into(),
                    ];
                    if let Some(node) = RedisNode::try_start_on(port, &extra) {
                        return node;
                    }
                }
                panic!("could not start a cluster member");
            })
            .collect();
        let addrs: Vec<String> = members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.port))
            .collect();
        let status = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli (Debian package redis-tools) is needed for the cluster tests");
        assert!(status.success(), "redis-cli --cluster create failed");
        let cluster = Self { members, _dir: dir };
        cluster.wait_ok(Duration::from_secs(20));
        cluster
    }

    /// Waits until every running member says `cluster_state:ok`.
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
        let mut url = format!("redis-cluster://127.0.0.1:{}", self.members[0].port);
        for (i, m) in self.members.iter().enumerate().skip(1) {
            url.push(if i == 1 { '?' } else { '&' });
            url.push_str(&format!("node=127.0.0.1:{}", m.port));
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

/// A master, one replica of it, and one Sentinel watching them under the service name `locks`
/// (quorum 1, master declared down after 1 s).
#[derive(Debug)]
pub struct SentinelSet {
    pub master: RedisNode,
    pub replica: RedisNode,
    pub sentinel_port: u16,
    sentinel: Child,
    _dir: TempDir,
}

impl SentinelSet {
    pub fn start() -> Self {
        let master = RedisNode::start();
        let replica =
            RedisNode::start_with(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
        let until = Instant::now() + Duration::from_secs(10);
        while !replica
            .cmd(&[b"INFO", b"replication"])
            .contains("master_link_status:up")
        {
            assert!(Instant::now() < until, "replica did not sync");
            std::thread::sleep(Duration::from_millis(50));
        }
        let dir = TempDir::new("sentinel");
        let sentinel_port = free_port();
        let conf = dir.0.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {sentinel_port}\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\n\
                 sentinel monitor locks 127.0.0.1 {} 1\n\
                 sentinel down-after-milliseconds locks 1000\n\
                 sentinel failover-timeout locks 10000\n",
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

    pub fn url(&self) -> String {
        format!(
            "redis-sentinel://127.0.0.1:{}?sentinelServiceName=locks",
            self.sentinel_port
        )
    }

    /// The port of the master the Sentinel names now.
    pub fn master_port(&self) -> Option<u16> {
        let reply = self.sentinel_cmd(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "locks"])?;
        // `*2 $9 127.0.0.1 $4 7001`: the port is the last line.
        reply.lines().last()?.trim().parse().ok()
    }

    /// One command to the Sentinel; the raw reply text (every line), read until it stops coming.
    fn sentinel_cmd(&self, args: &[&str]) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.sentinel_port)).ok()?;
        s.set_read_timeout(Some(Duration::from_millis(300))).ok()?;
        let mut req = format!("*{}\r\n", args.len());
        for a in args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(req.as_bytes()).ok()?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while let Ok(n) = s.read(&mut chunk) {
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        (!buf.is_empty()).then(|| String::from_utf8_lossy(&buf).into_owned())
    }
}

impl Drop for SentinelSet {
    fn drop(&mut self) {
        let _ = self.sentinel.kill();
        let _ = self.sentinel.wait();
    }
}
