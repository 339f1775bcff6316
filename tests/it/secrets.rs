//! No password in anything the library prints: `Debug` of the configuration, the builder, the engine
//! and every report, and every error's `Debug` and `Display`, for a node URL with a password, a
//! Sentinel password, and a password holding URL separators.

use std::time::Duration;

use crate::common::RedisNode;
use redlock_engine::{Builder, Config, Redlock};

const SECRET: &str = "s3cret-Pw";

fn assert_hidden(what: &str, text: &str) {
    assert!(!text.contains(SECRET), "{what} prints the password: {text}");
    // The rest of the URL is still there, so the output stays useful.
    assert!(
        text.contains("127.0.0.1") || text.contains("sentinel"),
        "{what}: {text}"
    );
}

#[test]
fn configuration_and_builder_debug_hide_passwords() {
    let config = Config {
        nodes: vec![
            format!("redis://locker:{SECRET}@127.0.0.1:7001/2"),
            format!("redis://:{SECRET}@127.0.0.1:7002"),
            format!("redis://locker:a?b/{SECRET}@127.0.0.1:7003"),
            format!(
                "redis-sentinel://127.0.0.1:26379?sentinelServiceName=m&sentinelPassword={SECRET}"
            ),
        ],
        ..Config::default()
    };
    assert_hidden("Config's Debug", &format!("{config:?}"));
    assert_hidden("Config's pretty Debug", &format!("{config:#?}"));
    let builder = Builder::from(config.clone());
    assert_hidden("Builder's Debug", &format!("{builder:?}"));
    // The URLs themselves are kept: the builder connects with them.
    assert!(builder.config().nodes[0].contains(SECRET));
}

#[tokio::test]
async fn engine_reports_and_errors_hide_passwords() {
    let node = RedisNode::start_with(&["--requirepass", SECRET]);
    let good = format!("redis://:{SECRET}@127.0.0.1:{}", node.port);
    let e = crate::common::builder()
        .nodes([good])
        .build()
        .await
        .unwrap();
    assert_hidden("Redlock's Debug", &format!("{e:?}"));
    assert_hidden("nodes_status", &format!("{:?}", e.nodes_status()));
    let guard = e.lock("secret").ttl(Duration::from_secs(5)).await.unwrap();
    assert_hidden(
        "inspect",
        &format!("{:?}", e.inspect("secret").await.unwrap()),
    );
    assert!(!format!("{guard:?}").contains(SECRET));
    let busy = e.lock("secret").once().await.unwrap_err();
    assert!(!format!("{busy:?} {busy}").contains(SECRET));
    let forced = e.force_release("secret").await.unwrap();
    assert!(!format!("{forced:?}").contains(SECRET));
    drop(guard);

    // A wrong password: the failure names the node, never the password tried.
    let wrong = format!("redis://:{SECRET}x@127.0.0.1:{}", node.port);
    let e = crate::common::builder()
        .nodes([wrong])
        .connect_timeout(Duration::from_millis(500))
        .build()
        .await
        .unwrap();
    let err = e.lock("secret").once().await.unwrap_err();
    assert_hidden("a failed acquire's Debug", &format!("{err:?}"));
    assert!(!format!("{err}").contains(SECRET), "{err}");
    assert_hidden(
        "nodes_status after a failed connect",
        &format!("{:?}", e.nodes_status()),
    );

    // An invalid configuration names the URL without the password.
    let bad = Redlock::builder()
        .nodes([format!("redis://u:{SECRET}@127.0.0.1:6379/db")])
        .build()
        .await
        .unwrap_err();
    assert_hidden("InvalidConfig", &format!("{bad:?} {bad}"));
}
