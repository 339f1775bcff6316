//! Many tasks, one resource: they queue in-process (FIFO) instead of hammering the nodes, and the lock
//! is handed between them a bounded number of times without a round trip.
//!
//! Run: `cargo run --example contention` (starts three redis-server nodes, or set `REDLOCK_NODES`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod support;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (redlock, _servers) = support::engine().await?;
    let counter = Arc::new(AtomicU64::new(0));

    // 1. 32 tasks, 20 increments each, of a counter that only the lock holder may touch.
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (redlock, counter) = (redlock.clone(), counter.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..20 {
                // Waits up to 30 s: behind 31 others, each holding briefly.
                let request = redlock.lock("counter").ttl(Duration::from_secs(5));
                let guard = request.wait_up_to(Duration::from_secs(30)).await?;
                // A read-modify-write that would lose updates without mutual exclusion.
                let seen = counter.load(Ordering::SeqCst);
                tokio::task::yield_now().await;
                counter.store(seen + 1, Ordering::SeqCst);
                // The awaited release hands the lock to the next task here without a round trip.
                guard.release().await?;
            }
            Ok::<_, redlock_engine::LockError>(())
        }));
    }
    for task in tasks {
        task.await??;
    }

    // 2. Every increment survived: 32 x 20.
    let total = counter.load(Ordering::SeqCst);
    println!(
        "counter = {total} (expected 640) in {:?}",
        started.elapsed()
    );
    if total != 640 {
        return Err("lost updates".into());
    }
    Ok(())
}
