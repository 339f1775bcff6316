//! Durable nodes (`?durable=true`): a node whose AOF is fsynced before every reply keeps its lock keys
//! across a `kill -9`, so quarantine lets it vote at once — but only when its settings do not refute
//! the claim, which the engine reads with `CONFIG GET` at every connect.

use std::path::PathBuf;
use std::time::Duration;

use crate::common::{build, guarded, RedisNode};
use redlock_engine::{LockError, NodeError, Redlock};

/// Long enough that a quarantined node could not vote during the test.
const MAX_TTL: Duration = Duration::from_secs(30);
const TTL: Duration = Duration::from_secs(10);

/// A node with `appendfsync always` (or `fsync`) in a directory of its own, removed on drop.
struct AofNode {
    node: RedisNode,
    dir: PathBuf,
}

impl AofNode {
    fn start(fsync: &str, extra: &[&str]) -> Self {
        // A counter, not a free port's number: two nodes of one process must never share a
        // directory (the port, free when asked, may be handed out twice).
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("redlock-durable-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dir_arg = dir.to_string_lossy().into_owned();
        let mut args = vec![
            "--appendonly",
            "yes",
            "--appendfsync",
            fsync,
            "--dir",
            &dir_arg,
        ];
        args.extend(extra);
        Self {
            node: RedisNode::start_with(&args),
            dir,
        }
    }
}

impl AofNode {
    /// What the node holds and read from its directory, for a failure's message.
    fn what_it_has(&self) -> String {
        let files: Vec<String> = walk(&self.dir)
            .into_iter()
            .map(|(path, len)| format!("{path} ({len} bytes)"))
            .collect();
        let info = self.node.cmd_str(&["INFO", "persistence"]);
        let facts: Vec<&str> = info
            .lines()
            .filter(|l| l.starts_with("loading:") || l.starts_with("aof_"))
            .collect();
        format!(
            "DBSIZE {}, {facts:?}, files {files:?}",
            self.node.cmd_str(&["DBSIZE"])
        )
    }
}

/// Every file under `dir`, with its length.
fn walk(dir: &std::path::Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        match entry.metadata() {
            Ok(m) if m.is_dir() => out.extend(walk(&path)),
            Ok(m) => out.push((path.display().to_string(), m.len())),
            Err(_) => {}
        }
    }
    out
}

impl Drop for AofNode {
    fn drop(&mut self) {
        self.node.kill9();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `appendfsync always` makes a node answer a write only after its fsync, and on a shared disk one
/// can stall past the default deadline (50 ms at this TTL): CI once saw a release time out on the
/// two nodes that held the key while the third, with nothing to delete and so nothing to fsync,
/// answered. These tests are about votes after a restart, not latency, so a node is waited for.
const FSYNC_DEADLINE: Duration = Duration::from_secs(2);

async fn engine(urls: Vec<String>) -> Redlock {
    build(guarded(urls, MAX_TTL).node_timeout(FSYNC_DEADLINE)).await
}

fn durable_url(port: u16, auth: &str) -> String {
    format!("redis://{auth}127.0.0.1:{port}?durable=true")
}

fn quarantined(result: &Result<redlock_engine::Lock, LockError>) -> bool {
    matches!(result, Err(LockError::QuorumNotReached { failures, .. })
        if failures.iter().all(|(_, cause)| *cause == NodeError::Quarantined))
}

#[tokio::test]
async fn a_durable_node_votes_at_once_and_keeps_its_locks_across_kill_9() {
    let mut nodes: Vec<AofNode> = (0..3).map(|_| AofNode::start("always", &[])).collect();
    let urls: Vec<String> = nodes.iter().map(|n| durable_url(n.node.port, "")).collect();
    let a = engine(urls.clone()).await;
    // A's lock lands on n0 and n1 only (n2 holds someone else's key for now), so after n0 restarts,
    // B could win n0 and n2 if n0 had forgotten it: scenario 7's overlap.
    let someone = |node: &RedisNode, key: &[u8]| {
        node.cmd(&[b"SET", key, b"someone", b"PX", b"60000"]);
    };
    someone(&nodes[2].node, b"redlock:{ledger}");
    // Seconds-old nodes: quarantine would hold them back for MAX_TTL, the durable claim does not.
    let held = a
        .acquire(b"ledger", TTL)
        .await
        .expect("durable nodes vote at once");
    nodes[2].node.cmd(&[b"DEL", b"redlock:{ledger}"]);
    nodes[0].node.restart(); // kill -9, then start again on the same port and directory
    assert!(
        nodes[0].node.exists(b"redlock:{ledger}"),
        "the AOF brought the key back: {}",
        nodes[0].what_it_has()
    );
    let b = engine(urls).await;
    let stolen = b.try_acquire(b"ledger", TTL).await;
    assert!(
        matches!(stolen, Err(LockError::Contended { .. })),
        "the restarted node remembers A's lock: {stolen:?}"
    );
    // A's engine reconnects to the new process (new run_id) and lets it vote at once: with n1
    // taken, a grant needs n0.
    someone(&nodes[1].node, b"redlock:{after-restart}");
    let mut granted = None;
    for _ in 0..50 {
        match a.acquire(b"after-restart", TTL).await {
            Ok(lock) if lock.attempts() == 1 => {
                granted = Some(lock);
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let lock = granted.expect("a durable node is not quarantined after its restart");
    a.release(lock).await.unwrap();
    a.release(held).await.unwrap();
}

#[tokio::test]
async fn a_refuted_claim_is_not_trusted() {
    // `appendfsync everysec` survives a process crash, not a machine crash: not durable.
    let everysec = AofNode::start("everysec", &[]);
    let plain = RedisNode::start(); // appendonly no
    for port in [everysec.node.port, plain.port] {
        let e = engine(vec![durable_url(port, "")]).await;
        let lock = e.acquire(b"refuted", TTL).await;
        assert!(
            quarantined(&lock),
            "a young node whose settings refute the claim stays quarantined: {lock:?}"
        );
    }
}

#[tokio::test]
async fn an_unverifiable_claim_is_trusted() {
    // A user that may not run CONFIG (managed services rename or forbid it): the operator's word stands.
    // `everysec`, which the engine would refute if it could read it: so trusted means unread.
    let node = AofNode::start(
        "everysec",
        &[
            "--user", "locker", "on", ">pw", "~*", "&*", "+@all", "-config",
        ],
    );
    let e = engine(vec![durable_url(node.node.port, "locker:pw@")]).await;
    let lock = e.acquire(b"unverified", TTL).await.expect("claim trusted");
    e.release(lock).await.unwrap();
    // The same node without the claim is an ordinary young node.
    let e = engine(vec![format!(
        "redis://locker:pw@127.0.0.1:{}",
        node.node.port
    )])
    .await;
    assert!(quarantined(&e.acquire(b"unclaimed", TTL).await));
}
