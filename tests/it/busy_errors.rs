//! A busy lock's error says whose it is and how long it can still be held: `LockError::holder` and
//! `LockError::retry_after`, read from the nodes when the call gives up.

use std::time::Duration;

use crate::common::{fresh_config, fresh_engine, fresh_nodes, nodes, urls};
use redlock_engine::{Config, LockError, Redlock};

fn within(d: Option<Duration>, low_ms: u64, high_ms: u64) -> bool {
    d.is_some_and(|d| d >= Duration::from_millis(low_ms) && d <= Duration::from_millis(high_ms))
}

#[tokio::test]
async fn a_busy_error_names_the_holder_and_when_its_keys_run_out() {
    let cluster = nodes(3);
    let holder = Redlock::new(Config {
        holder_label: Some("worker-7".into()),
        ..fresh_config(urls(&cluster))
    })
    .await
    .unwrap();
    let other = fresh_engine(urls(&cluster)).await;
    let _held = holder
        .lock("r")
        .ttl(Duration::from_secs(5))
        .once()
        .await
        .unwrap();

    let err = other.lock("r").once().await.unwrap_err();
    assert!(
        matches!(err, LockError::Contended { local: false, .. }),
        "{err:?}"
    );
    assert_eq!(err.holder(), Some("worker-7"));
    assert!(within(err.retry_after(), 4_000, 5_000), "{err:?}");
    let shown = err.to_string();
    assert!(
        shown.contains("worker-7") && shown.contains("free in at most"),
        "{shown}"
    );

    // A bounded wait that runs out keeps both on its last error.
    let err = other
        .lock("r")
        .wait_up_to(Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::Timeout { .. }), "{err:?}");
    assert_eq!(err.holder(), Some("worker-7"));
    assert!(within(err.retry_after(), 3_500, 5_000), "{err:?}");
}

#[tokio::test]
async fn readers_holding_off_a_writer_and_a_local_holder() {
    let (_cluster, [redlock, other]) = fresh_nodes(3).await;
    let _reader = redlock
        .lock("doc")
        .read()
        .ttl(Duration::from_secs(3))
        .await
        .unwrap();
    let err = other.lock("doc").write().once().await.unwrap_err();
    assert!(within(err.retry_after(), 2_000, 3_000), "{err:?}");
    assert_eq!(err.holder(), None, "no label");

    // Held by a task of this process: nothing was asked of the nodes.
    let _mine = redlock.lock("local").await.unwrap();
    let err = redlock.lock("local").once().await.unwrap_err();
    assert!(
        matches!(err, LockError::Contended { local: true, .. }),
        "{err:?}"
    );
    assert_eq!(err.retry_after(), None);
}
