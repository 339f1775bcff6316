//! Nodes whose lock user may not run scripts (an ACL user without `@scripting`): on Valkey 9 the
//! exclusive lock works on native commands (acquire `SET NX PX`, extend `SET ... IFEQ ... GET`,
//! release `DELIFEQ`, waiting with the waiter mark and the notification); a kind that needs a
//! script is refused at once naming the node, and a server without native commands refuses the
//! connect naming what it lacks. Run on Valkey with `scripts/with-server valkey cargo test ...`;
//! elsewhere the native half skips with a message.

use std::time::Duration;

use crate::common::skip_unless;
use redlock_engine::{LockError, NodeError, Redlock};
use testkit::server::{self, Needs};
use testkit::RedisNode;

const TTL: Duration = Duration::from_secs(5);

/// A node whose `locker` user may do anything but scripting.
fn node() -> RedisNode {
    RedisNode::start_without_scripting()
}

fn url(node: &RedisNode) -> String {
    node.locker_url()
}

async fn engine(nodes: &[RedisNode], label: Option<&str>) -> Redlock {
    crate::common::builder()
        .nodes(nodes.iter().map(url))
        .retry(200, Duration::from_millis(5), Duration::from_millis(5))
        .connect_timeout(Duration::from_secs(1))
        .holder_label(label.map(String::from))
        .build()
        .await
        .expect("engine builds")
}

#[tokio::test]
async fn exclusive_locks_work_on_native_commands_and_script_kinds_are_refused_at_once() {
    skip_unless!(Native);
    let nodes: Vec<RedisNode> = (0..3).map(|_| node()).collect();
    let e = engine(&nodes, None).await;
    assert_eq!(e.connected_nodes(), 3, "{:?}", e.nodes_status());

    let mut lock = e.acquire("plain", TTL).await.expect("acquire");
    assert!(nodes.iter().all(|n| n.exists(b"redlock:{plain}")));
    e.extend(&mut lock, TTL).await.expect("extend");
    // Another engine waits (waiter mark, notification) and gets it at the release.
    let other = engine(&nodes, None).await;
    let waiter = tokio::spawn(async move {
        let lock = other
            .acquire("plain", TTL)
            .await
            .expect("the waiter gets it");
        other.release(lock).await.expect("the waiter releases");
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    e.release(lock).await.expect("release");
    waiter.await.unwrap();
    // The waiter's release returned at a majority: the last node may still be running it.
    assert!(crate::common::nowhere(&nodes, b"redlock:{plain}", Duration::from_secs(2)).await);

    // Kinds with scripts: refused before anything is sent, naming a node.
    let port = |why: &str| nodes.iter().any(|n| why.contains(&n.port.to_string()));
    for refused in [
        e.acquire_fenced("scripted", TTL).await,
        e.acquire_read("scripted", TTL).await,
        e.acquire_permit("scripted", 2, TTL).await,
        e.acquire_many(&[&b"scripted"[..], &b"other"[..]], TTL)
            .await,
    ] {
        match refused {
            Err(LockError::InvalidConfig(why)) => {
                assert!(port(&why) && why.contains("scripting"), "{why}")
            }
            other => panic!("expected InvalidConfig, got {other:?}"),
        }
    }
    let labeled = engine(&nodes, Some("me")).await;
    let refused = labeled.acquire("scripted", TTL).await.unwrap_err();
    assert!(
        matches!(refused, LockError::InvalidConfig(_)),
        "{refused:?}"
    );
    for n in &nodes {
        for key in [
            &b"redlock:{scripted}"[..],
            b"redlock:{scripted}:fence",
            b"redlock:{other}",
        ] {
            assert!(!n.exists(key), "nothing written");
        }
    }
}

#[tokio::test]
async fn a_server_without_native_commands_refuses_the_connect_naming_what_it_lacks() {
    if server::lacks(server::current(), Needs::Native).is_none() {
        eprintln!(
            "SKIPPED no_scripting::a_server_without_native_commands_refuses_the_connect_naming_what_it_lacks: \
             the current server has native commands"
        );
        return;
    }
    let n = node();
    let e = engine(std::slice::from_ref(&n), None).await;
    match e.acquire("plain", TTL).await {
        Err(LockError::QuorumNotReached {
            ok: 0, failures, ..
        }) => match &failures[0].1 {
            NodeError::Connect(why) => {
                assert!(why.contains(&n.port.to_string()), "{why}");
                assert!(why.contains("NOPERM") && why.contains("native"), "{why}");
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert!(!n.exists(b"redlock:{plain}"));
}
