//! Acquire, extend and release a lock on three redis-server nodes this example starts itself.
//!
//! Run: `cargo run --example basic` (needs `redis-server` on the PATH), or point it at your own nodes:
//! `REDLOCK_NODES=redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003 cargo run --example basic`.

use std::time::Duration;

use redlock_engine::{LockError, Redlock};

mod support;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. Nodes: yours from REDLOCK_NODES, or three throwaway ones on free loopback ports.
    let (urls, servers) = support::nodes()?;

    // 2. The engine: one pipelined connection per node.
    let redlock = Redlock::builder()
        .nodes(urls)
        .quarantine(!servers.started_here())
        .build()
        .await?;

    // 3. Acquire for 10 s. The lock is held on a majority with at least 90% of its TTL left.
    let mut lock = redlock
        .acquire(b"orders:42", Duration::from_secs(10))
        .await?;
    println!("acquired {lock:?}");

    // 4. A second owner is refused while we hold it.
    match redlock
        .try_acquire(b"orders:42", Duration::from_secs(10))
        .await
    {
        // From this process it is refused locally, without a round trip; from another process the
        // nodes would answer "taken".
        Err(e @ LockError::Contended { .. }) => println!("second owner refused: {e}"),
        other => println!("unexpected: {other:?}"),
    }

    // 5. Need more time? Extend before `valid_until`; validity is recomputed from the extend's start.
    redlock.extend(&mut lock, Duration::from_secs(20)).await?;
    println!("extended: {:?} left", lock.remaining());

    // 6. Release (owner-checked on every node).
    redlock.release(lock).await?;
    println!("released");
    Ok(())
}
