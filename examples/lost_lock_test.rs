//! A service's test of its lost-lock path, without Redis: three memory nodes in this process (the
//! `testing` feature), a job holding a lock, and the lock's keys expired under it on a majority of
//! the nodes — as when the job stalls past its TTL. The test checks that the job notices and stops
//! before its next write.
//!
//! Run: `cargo run --example lost_lock_test --features testing`. In a service's own crate the same
//! test is a `#[tokio::test]`, with `redlock-engine = { ..., features = ["testing"] }` under
//! `[dev-dependencies]`.

use std::time::Duration;

use redlock_engine::testing::MemoryNodes;
use redlock_engine::{LockError, Redlock};
use tokio::sync::mpsc;

/// The service's code under test: a job that writes ten steps under a lock, each one only while the
/// lock is still its own. It stops at once when it learns the lock is lost (`lost`), and asks the
/// nodes before every write (`is_held`), which is how it learns.
async fn report_job(
    redlock: Redlock,
    written: mpsc::UnboundedSender<u32>,
) -> Result<(), LockError> {
    let guard = redlock
        .lock("report:daily")
        .ttl(Duration::from_secs(30))
        .await?;
    for step in 1..=10 {
        tokio::select! {
            why = guard.lost() => return Err(why),
            _ = tokio::time::sleep(Duration::from_millis(20)) => {} // the step's work
        }
        if !guard.is_held().await? {
            return Err(guard.lost().await);
        }
        let _ = written.send(step); // the step's write
    }
    guard.release().await
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. Three memory nodes, and an engine on them (its real transport; quarantine off: the nodes
    //    were started a moment ago).
    let nodes = MemoryNodes::start(3).await?;
    let redlock = nodes.redlock().await?;

    // 2. The job runs; wait for its second write.
    let (tx, mut written) = mpsc::unbounded_channel();
    let job = tokio::spawn(report_job(redlock.clone(), tx));
    while written.recv().await.ok_or("the job ended early")? < 2 {}
    println!("job wrote steps 1 and 2");

    // 3. Its lock's keys vanish on two of the three nodes, as at the end of their TTL. (A key by
    //    name works too: `expire_now(b"redlock:{report:daily}")`.)
    for i in [0, 1] {
        nodes.node(i).expire_resource("redlock:", "report:daily");
    }
    println!("lock expired on nodes 0 and 1");

    // 4. The job stops before its next write, and says why.
    let outcome = job.await?;
    let mut last = 2;
    while let Ok(step) = written.try_recv() {
        last = step;
    }
    match outcome {
        Err(LockError::NotOwner) if last <= 3 => {
            println!("job stopped after step {last}: lock lost (not owner)")
        }
        other => return Err(format!("job went on: {other:?}, last step {last}").into()),
    }

    // 5. Its dropped guard released what was left: nothing stays on the third node.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let left = nodes.node(2).keys();
    if !left.is_empty() {
        return Err(format!("left on node 2: {left:?}").into());
    }
    println!("nothing left on the nodes");
    Ok(())
}
