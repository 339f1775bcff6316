//! Metrics through the `metrics` facade and `tracing` events per round, with the recorder and the
//! subscriber installed (for this test's thread) before the engine is built; the lock value never
//! appears in the output.

use std::time::Duration;

use crate::common::{dead_url, nodes, urls};
use crate::Captured;

#[tokio::test]
async fn rounds_are_counted_and_traced_without_the_lock_value() {
    let recording = crate::Recording::start().await;
    let snapshotter = &recording.snapshotter;
    let (logs, _subscriber) = Captured::install(tracing::Level::DEBUG);

    let cluster = nodes(2);
    let mut node_urls = urls(&cluster);
    node_urls.push(dead_url()); // node 2 is down: its failures are counted per node
    let e = crate::common::builder()
        .nodes(node_urls)
        .build()
        .await
        .unwrap();
    let mut lock = e
        .acquire(b"observed", Duration::from_secs(5))
        .await
        .unwrap();
    let value = cluster[0].cmd(&[b"GET", b"redlock:{observed}"]);
    e.extend(&mut lock, Duration::from_secs(5)).await.unwrap();
    e.release(lock).await.unwrap();

    let snapshot = snapshotter.snapshot().into_vec();
    let count = |name: &str, labels: &[(&str, &str)]| crate::metric(&snapshot, name, labels) as u64;
    assert_eq!(
        count(
            "redlock_rounds_total",
            &[("op", "acquire"), ("outcome", "won")]
        ),
        1
    );
    assert_eq!(
        count(
            "redlock_rounds_total",
            &[("op", "extend"), ("outcome", "won")]
        ),
        1
    );
    assert_eq!(
        count(
            "redlock_rounds_total",
            &[("op", "release"), ("outcome", "won")]
        ),
        1
    );
    assert_eq!(count("redlock_round_seconds", &[("op", "acquire")]), 1);
    assert!(
        count(
            "redlock_node_failures_total",
            &[("node", "2"), ("cause", "disconnected")]
        ) >= 1
    );

    let text = logs.text();
    assert!(text.contains("redlock round"), "{text}");
    assert!(
        text.contains("op=\"acquire\"") || text.contains("op=acquire"),
        "{text}"
    );
    assert!(
        !value.is_empty() && !text.contains(&value),
        "the lock value must never be logged"
    );
}
