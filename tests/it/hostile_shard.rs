//! A hostile member of a cluster node set: its slot map, its redirects and its replies cannot abort
//! the process, exhaust its memory, loop the engine, or cast a vote. Each case is one fake cluster
//! (a `testkit::hostile` server that describes itself as the only master) beside two standalone
//! masters: the healthy majority still grants, the cluster's vote fails with why, the process lives.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{build, nodes, quick};
use redlock_engine::{LockError, Redlock};
use testkit::hostile::{normal, rss, verb, Action, Hostile};

const TTL: Duration = Duration::from_secs(5);

/// `CLUSTER SHARDS` naming one master on `port` that serves every slot.
fn one_shard(port: u16) -> Vec<u8> {
    let mut out =
        b"*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n*6\r\n".to_vec();
    out.extend_from_slice(format!("$4\r\nport\r\n:{port}\r\n").as_bytes());
    out.extend_from_slice(b"$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n");
    out
}

/// A fake cluster: `CLUSTER` answered by `map(own port)`, lock commands by `lock(own port)`, the
/// rest like Redis.
fn fake_cluster(
    map: impl Fn(u16) -> Action + Send + Sync + 'static,
    lock: impl Fn(u16) -> Action + Send + Sync + 'static,
) -> Hostile {
    fake_cluster_by(move |own, _| map(own), lock)
}

/// [`fake_cluster`] whose map also sees the `CLUSTER` command (its subcommand).
fn fake_cluster_by(
    map: impl Fn(u16, &[Vec<u8>]) -> Action + Send + Sync + 'static,
    lock: impl Fn(u16) -> Action + Send + Sync + 'static,
) -> Hostile {
    // The server's port is known only once it listens: the rule reads it from here.
    let port = Arc::new(AtomicU16::new(0));
    let seen = port.clone();
    let bad = Hostile::start(move |cmd| {
        let own = seen.load(Ordering::Relaxed);
        match verb(cmd).as_str() {
            "CLUSTER" => map(own, cmd),
            "SET" | "EVALSHA" | "EVAL" => lock(own),
            _ => Action::Send(normal(cmd)),
        }
    });
    port.store(bad.port, Ordering::Relaxed);
    bad
}

/// A fake cluster with a sound map ([`one_shard`] on its own port) whose lock commands are
/// answered with `reply(own port)`: a master that misbehaves only once routed to.
fn shard_replying(reply: impl Fn(u16) -> Vec<u8> + Send + Sync + 'static) -> Hostile {
    fake_cluster(
        |port| Action::Send(one_shard(port)),
        move |port| Action::Send(reply(port)),
    )
}

async fn engine(urls: Vec<String>) -> Redlock {
    build(quick(urls, 0).node_timeout(Duration::from_secs(1))).await
}

/// Two healthy masters beside the fake cluster grant and release; alone with one of them, the lock
/// is refused and the cluster's failure says `expect`.
async fn survives(bad: Hostile, expect: &str) {
    let before = rss();
    let healthy = nodes(2);
    let cluster = format!("redis-cluster://127.0.0.1:{}", bad.port);
    let e = engine(vec![healthy[0].url(), healthy[1].url(), cluster.clone()]).await;
    let lock = e
        .try_acquire(b"res", TTL)
        .await
        .expect("the healthy majority grants");
    e.release(lock).await.expect("and releases");
    let pair = engine(vec![healthy[0].url(), cluster]).await;
    match pair.try_acquire(b"res-pair", TTL).await {
        Ok(_) => panic!("granted with the hostile cluster's vote"),
        Err(LockError::QuorumNotReached { failures, .. }) => {
            let text = failures
                .iter()
                .map(|(_, e)| e.to_string())
                .collect::<Vec<_>>()
                .join("; ");
            assert!(text.contains(expect), "{text:?} lacks {expect:?}");
        }
        Err(other) => panic!("expected QuorumNotReached, got {other}"),
    }
    let grown = rss().saturating_sub(before);
    assert!(grown < 64 << 20, "resident memory grew by {grown} bytes");
}

/// A redirect reply, given the fake member's own port.
type Redirect = fn(u16) -> String;

#[tokio::test]
async fn redirects_cost_a_bounded_number_of_hops() {
    let cases: [(Redirect, &str); 3] = [
        // A member that redirects forever to itself.
        (|port| format!("-MOVED 1 127.0.0.1:{port}\r\n"), "redirects"),
        // A member that asks forever.
        (|port| format!("-ASK 1 127.0.0.1:{port}\r\n"), "redirects"),
        // A redirect to an unknown master fails the vote at once.
        (|_| "-MOVED 1 127.0.0.1:1\r\n".into(), "not connected"),
    ];
    for (redirect, why) in cases {
        survives(shard_replying(move |port| redirect(port).into_bytes()), why).await;
    }
}

#[tokio::test]
async fn hostile_slot_maps_are_refused() {
    let deep = "*1\r\n".repeat(100_000).into_bytes();
    let out_of_range = b"*1\r\n*3\r\n:0\r\n:99999\r\n*2\r\n$9\r\n127.0.0.1\r\n:1\r\n".to_vec();
    for (map, why) in [
        (deep, "nested deeper"),
        // Read as `CLUSTER SHARDS` (answered, so `CLUSTER SLOTS` is not asked): not a map.
        (out_of_range, "odd number of items"),
        (b"$2000000000\r\n".to_vec(), "larger than max_reply_size"),
        (b":7\r\n".to_vec(), "expected an array"),
    ] {
        let bad = fake_cluster(move |_| Action::Send(map.clone()), |_| Action::Normal);
        // No map: the node set routes nothing, so its vote fails, with why the map was refused.
        survives(bad, why).await;
    }
}

#[tokio::test]
async fn junk_from_a_shard_master_is_bounded_like_a_standalone_nodes() {
    let deep = "*1\r\n".repeat(100_000).into_bytes();
    survives(shard_replying(move |_| deep.clone()), "nested deeper").await;
}

#[tokio::test]
async fn a_member_without_cluster_shards_is_read_with_cluster_slots() {
    let bad = fake_cluster_by(
        |own, cmd| match cmd.get(1).map(|s| s.to_ascii_uppercase()) {
            Some(sub) if sub == b"SHARDS" => {
                Action::Send(b"-ERR unknown subcommand 'SHARDS'\r\n".to_vec())
            }
            _ => Action::Send(
                format!("*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:{own}\r\n")
                    .into_bytes(),
            ),
        },
        |_| Action::Normal,
    );
    let e = engine(vec![format!("redis-cluster://127.0.0.1:{}", bad.port)]).await;
    // The fake answers `SET` with `+OK`: routed by the map it read with CLUSTER SLOTS.
    let lock = e.try_acquire(b"old-server", TTL).await.expect("routed");
    e.release(lock).await.ok();
    assert_eq!(e.nodes_status()[0].shards.len(), 1);
}
