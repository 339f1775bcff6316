//! Connecting like the rest of the Redis ecosystem: password, ACL user, database number.

use std::time::Duration;

use crate::common::{acl, build, quick, transports, RedisNode};
use redlock_engine::{LockError, NodeError, Redlock};

const TTL: Duration = Duration::from_secs(5);

async fn engine(url: String, transport: redlock_engine::Transport) -> Redlock {
    build(quick([url], 0).transport(transport)).await
}

#[tokio::test]
async fn password_and_acl_user_with_minimal_permissions() {
    // One config line: `user locker on >pw ~redlock:* &redlock:* +set ...`; each word is its own
    // argument.
    let mut args = vec!["--requirepass", "s3cret", "--user", "locker", "on", ">pw"];
    args.extend(acl::lock_user());
    let node = RedisNode::start_with(&args);
    for transport in transports() {
        for url in [
            format!("redis://:s3cret@127.0.0.1:{}", node.port),
            format!("redis://locker:pw@127.0.0.1:{}", node.port),
        ] {
            let e = engine(url, transport).await;
            let mut lock = e
                .acquire(b"authed", TTL)
                .await
                .unwrap_or_else(|err| panic!("{transport:?}: {err}"));
            e.extend(&mut lock, TTL).await.unwrap();
            e.release(lock).await.unwrap();
        }
    }
}

#[tokio::test]
async fn wrong_password_is_a_failed_node_not_a_panic_or_a_grant() {
    let node = RedisNode::start_with(&["--requirepass", "s3cret"]);
    for transport in transports() {
        let e = engine(format!("redis://:wrong@127.0.0.1:{}", node.port), transport).await;
        assert_eq!(e.connected_nodes(), 0);
        match e.acquire(b"authed", TTL).await {
            Err(LockError::QuorumNotReached {
                ok: 0, failures, ..
            }) => {
                assert_eq!(failures.len(), 1);
                // Why, and which node: the address (never the password) and the server's answer.
                assert!(
                    matches!(&failures[0].1, NodeError::Connect(why)
                        if why.contains(&format!("127.0.0.1:{}", node.port)) && !why.contains("wrong")),
                    "{transport:?}: {:?}",
                    failures[0]
                );
            }
            other => panic!("{transport:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn database_number_in_the_url_is_selected() {
    let node = RedisNode::start();
    for transport in transports() {
        let e = engine(format!("redis://127.0.0.1:{}/3", node.port), transport).await;
        let lock = e.acquire(b"in-db-3", TTL).await.unwrap();
        assert!(!node.exists(b"redlock:{in-db-3}"), "not in db 0");
        let in_db3 = node.cmd(&[
            b"EVAL",
            b"redis.call('SELECT', 3) return redis.call('EXISTS', KEYS[1])",
            b"1",
            b"redlock:{in-db-3}",
        ]);
        assert_eq!(in_db3, "1");
        e.release(lock).await.unwrap();
    }
}

#[tokio::test]
async fn a_missing_acl_permission_is_a_clear_refusal_not_a_grant() {
    // `nokeys` may run everything a lock needs, but only on `other:*` keys.
    let mut args = vec!["--user", "nokeys", "on", ">pw", "~other:*"];
    args.extend(acl::commands(acl::lock_user()));
    // `noscript` may write lock keys but not load or run the scripts that release them.
    args.extend([
        "--user",
        "noscript",
        "on",
        ">pw",
        "~redlock:*",
        "+set",
        "+get",
        "+info",
        "+ping",
    ]);
    let node = RedisNode::start_with(&args);
    for transport in transports() {
        for (user, refused_at_connect) in [("nokeys", false), ("noscript", true)] {
            let url = format!("redis://{user}:pw@127.0.0.1:{}", node.port);
            let e = engine(url, transport).await;
            match e.acquire(b"guarded", TTL).await {
                Err(LockError::QuorumNotReached {
                    ok: 0, failures, ..
                }) => {
                    let why = match &failures[0].1 {
                        // A user who could take locks but not release them is refused at connect,
                        // naming the node and the missing permission.
                        NodeError::Connect(why) if refused_at_connect => {
                            assert!(why.contains(&format!("127.0.0.1:{}", node.port)), "{why}");
                            why
                        }
                        NodeError::Server(why) if !refused_at_connect => why,
                        other => panic!("{transport:?} {user}: {other:?}"),
                    };
                    assert!(why.contains("NOPERM"), "{transport:?} {user}: {why}");
                }
                other => panic!("{transport:?} {user}: {other:?}"),
            }
            assert!(
                !node.exists(b"redlock:{guarded}"),
                "{user}: nothing written"
            );
        }
    }
}
