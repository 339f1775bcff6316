//! The on-call signals on real nodes: a lost renewed lock says so at warn level and is counted by
//! cause, a killed node leaves the voting gauge and says so, held locks are a gauge. The recorder and
//! the subscriber are this test thread's (see `observe`), so other modules do not count here.

use std::time::Duration;

use crate::common::{builder, nodes, urls};
use crate::Captured;
use metrics_util::debugging::{DebugValue, Snapshotter};
use redlock_engine::RenewPolicy;

/// A metric's value now (see [`crate::metric`]), counted since the last snapshot.
fn value(snapshotter: &Snapshotter, name: &str, labels: &[(&str, &str)]) -> f64 {
    crate::metric(&snapshotter.snapshot().into_vec(), name, labels)
}

async fn eventually(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    crate::common::eventually(within, &mut check).await
}

#[tokio::test]
async fn lost_locks_and_node_outages_are_signalled() {
    let recording = crate::Recording::start().await;
    let snapshotter = &recording.snapshotter;
    let (logs, _subscriber) = Captured::install(tracing::Level::INFO);

    let mut cluster = nodes(3);
    let e = builder().nodes(urls(&cluster)).build().await.unwrap();

    // Held locks: a gauge that follows the locks alive (process-wide: other modules' locks, taken
    // on other threads at the same time, count too, so only bounds are checked).
    let held = || value(snapshotter, "redlock_locks_held", &[]);
    let guard = e.lock("signals-held").await.unwrap();
    let with = held();
    guard.release().await.unwrap();
    let without = held();
    assert!(with >= 1.0 && without >= 0.0, "{with} then {without}");

    // A renewed lock whose key another owner took: lost, said and counted as "taken".
    let renewed = e
        .lock("signals-lost")
        .ttl(Duration::from_millis(600))
        .renewed(RenewPolicy::default())
        .await
        .unwrap();
    for node in &cluster {
        node.cmd(&[b"SET", b"redlock:{signals-lost}", b"someone-else"]);
    }
    tokio::time::timeout(Duration::from_secs(3), renewed.lost())
        .await
        .expect("the watchdog declares it lost");
    let lost = || {
        value(
            snapshotter,
            "redlock_locks_lost_total",
            &[("cause", "taken")],
        )
    };
    assert_eq!(lost(), 1.0);
    let text = logs.text();
    assert!(
        text.contains("WARN") && text.contains("renewed lock lost"),
        "{text}"
    );
    assert!(
        text.contains("signals-lost") && text.contains("taken"),
        "{text}"
    );
    drop(renewed);

    // Every node voting, then one killed: the gauge drops and the node is named.
    let voting = || value(snapshotter, "redlock_nodes_voting", &[]);
    assert!(eventually(Duration::from_secs(2), || voting() == 3.0).await);
    cluster[1].kill9();
    assert!(
        eventually(Duration::from_secs(3), || voting() == 2.0).await,
        "voting gauge: {}",
        voting()
    );
    let text = logs.text();
    assert!(text.contains("node disconnected"), "{text}");
    cluster[1].restart();
    assert!(eventually(Duration::from_secs(5), || voting() == 3.0).await);
    assert!(logs.text().contains("node votes again"));
}

/// Every `redlock_locks_held` value, one per engine label.
fn held_per_engine(snapshotter: &Snapshotter) -> Vec<(String, f64)> {
    let mut all: Vec<(String, f64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == "redlock_locks_held")
        .filter_map(|(key, _, _, value)| {
            let engine = key
                .key()
                .labels()
                .find(|l| l.key() == "engine")?
                .value()
                .to_string();
            match value {
                DebugValue::Gauge(g) => Some((engine, g.into_inner())),
                _ => None,
            }
        })
        .collect();
    all.sort_by(|a, b| a.1.total_cmp(&b.1));
    all
}

#[tokio::test]
async fn two_engines_in_one_process_report_their_gauges_apart() {
    let recording = crate::Recording::start().await;
    let snapshotter = &recording.snapshotter;
    let cluster = nodes(1);
    let one = builder().nodes(urls(&cluster)).build().await.unwrap();
    let two = builder().nodes(urls(&cluster)).build().await.unwrap();
    let a = one.lock("apart-a").await.unwrap();
    let b = two.lock("apart-b").await.unwrap();
    let c = two.lock("apart-c").await.unwrap();
    let held = held_per_engine(snapshotter);
    assert_eq!(held.len(), 2, "one gauge per engine: {held:?}");
    assert_eq!((held[0].1, held[1].1), (1.0, 2.0), "{held:?}");
    assert_ne!(held[0].0, held[1].0);
    assert_eq!(held[0].0.len(), 16, "the engine's tag in hex: {held:?}");
    for guard in [a, b, c] {
        guard.release().await.unwrap();
    }
    let held = held_per_engine(snapshotter);
    assert!(held.iter().all(|(_, v)| *v == 0.0), "{held:?}");
}
