//! What the fred transport does with a hostile node (`testkit::hostile`), recorded rather than fixed: fred
//! 10 frames replies with `redis-protocol`'s recursive decoder behind a `tokio_util` `Framed` with no
//! size limit, and exposes no setting to bound either (see the README's guarantees).
//!
//! The attacks that take the process down run in a child process (this test binary, re-run on one
//! `#[ignore]`d test), so the suite survives them and can say what happened.
#![cfg(feature = "fred")]

use std::time::Duration;

use crate::common::nodes;
use redlock_engine::{LockError, Redlock, Transport};
use testkit::hostile::{rss, Action, Hostile};

const TTL: Duration = Duration::from_secs(5);

async fn fred_engine(urls: Vec<String>) -> Redlock {
    crate::common::builder()
        .nodes(urls)
        .transport(Transport::Fred)
        .node_timeout(Duration::from_secs(1))
        .retry(0, Duration::from_millis(5), Duration::ZERO)
        .connect_timeout(Duration::from_millis(1000))
        .notify_releases(false)
        .build()
        .await
        .expect("engine builds")
}

/// One healthy node and the hostile one: whatever fred does, the lock must not be granted.
async fn attack(action: Action) -> Result<(), String> {
    let healthy = nodes(1);
    attack_beside(&healthy[0].url(), action).await
}

/// [`attack`] beside a healthy node someone else owns (a child process that may abort must not own
/// a redis-server: its `Drop` would never run and the server would outlive the test).
async fn attack_beside(healthy: &str, action: Action) -> Result<(), String> {
    let bad = Hostile::on("SET", action);
    let e = fred_engine(vec![healthy.to_string(), bad.url()]).await;
    match e.try_acquire(b"fred", TTL).await {
        Ok(_) => panic!("granted with the hostile node's vote"),
        Err(LockError::QuorumNotReached { failures, .. }) => Err(format!("{failures:?}")),
        Err(other) => Err(other.to_string()),
    }
}

#[tokio::test]
async fn fred_counts_no_wrongly_typed_reply_as_a_vote() {
    for reply in [&b":1\r\n"[..], b"*1\r\n:1\r\n", b"+QUEUED\r\n"] {
        let err = attack(Action::Send(reply.to_vec())).await.unwrap_err();
        assert!(err.contains("unexpected reply type"), "{err}");
    }
}

#[tokio::test]
#[ignore = "run in a child process by fred_deep_nesting_in_a_child"]
async fn child_fred_deep_nesting() {
    let err = attack_beside(&healthy_url(), Action::Send(b"*1\r\n".repeat(100_000))).await;
    println!("CHILD SURVIVED: {err:?}");
}

#[tokio::test]
#[ignore = "run in a child process by fred_huge_bulk_in_a_child"]
async fn child_fred_huge_bulk() {
    let before = rss();
    let err = attack_beside(
        &healthy_url(),
        Action::Stream {
            header: b"$2000000000\r\n".to_vec(),
            fill: b"x".to_vec(),
            total: 320 << 20,
        },
    )
    .await;
    // Give fred's reader time to take in the stream.
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!(
        "CHILD SURVIVED: grew {} MiB: {err:?}",
        rss().saturating_sub(before) >> 20
    );
}

/// The healthy node the parent started for a child test.
fn healthy_url() -> String {
    std::env::var(HEALTHY_ENV).expect("run by the parent test, which sets the healthy node")
}

const HEALTHY_ENV: &str = "HOSTILE_FRED_HEALTHY_NODE";

/// Runs one ignored test of this binary in a child process, beside a healthy node this process owns;
/// returns (exit success, output).
fn child(test: &str) -> (bool, String) {
    // The test's full name in this binary: `hostile_fred::child_…` (the module path without the crate).
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let healthy = nodes(1);
    crate::common::run_child_test(
        &format!("{module}::{test}"),
        &[(HEALTHY_ENV, healthy[0].url())],
    )
}

#[test]
fn fred_deep_nesting_in_a_child() {
    let (ok, out) = child("child_fred_deep_nesting");
    // From fred's source: `redis-protocol` recurses per level, so the child is expected to abort with
    // a stack overflow. Either way it must not have granted the lock (the child panics if it did).
    assert!(
        !out.contains("granted with the hostile node's vote"),
        "{out}"
    );
    let overflow = out.contains("stack overflow");
    eprintln!(
        "fred, 10^5 nested arrays: child {}",
        if overflow {
            "aborted: stack overflow"
        } else if ok {
            "survived"
        } else {
            "failed"
        }
    );
    assert!(overflow || ok, "{out}");
}

#[test]
fn fred_huge_bulk_in_a_child() {
    let (ok, out) = child("child_fred_huge_bulk");
    assert!(
        !out.contains("granted with the hostile node's vote"),
        "{out}"
    );
    let line = out
        .lines()
        .find(|l| l.contains("CHILD SURVIVED"))
        .unwrap_or("no report");
    eprintln!("fred, $2000000000 then 320 MiB: {line}");
    assert!(ok, "{out}");
}
