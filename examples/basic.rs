//! Take, extend and release a lock on three redis-server nodes this example starts itself.
//!
//! Run: `cargo run --example basic` (needs `redis-server` on the PATH), or point it at your own nodes:
//! `REDLOCK_NODES=redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003 cargo run --example basic`.

use std::time::Duration;

use redlock_engine::{ErrorClass, Redlock};

mod support;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. Nodes: yours from REDLOCK_NODES, or three throwaway ones on free loopback ports.
    let (urls, servers) = support::nodes()?;

    // 2. The engine: one pipelined connection per node. The crashed-node quarantine stays on for
    //    real nodes (see `support::Servers::quarantine`).
    let redlock = Redlock::builder()
        .nodes(urls)
        .quarantine(servers.quarantine())
        .build()
        .await?;

    // 3. Take the lock for 10 s: a guard, held on a majority with at least 90% of its TTL left.
    let mut guard = redlock
        .lock("orders:42")
        .ttl(Duration::from_secs(10))
        .await?;
    println!("acquired orders:42, {:?} left", guard.remaining());

    // 4. A second owner's single attempt is refused while we hold it, as busy. From this process it
    //    is refused locally, without a round trip; from another process the nodes answer "taken".
    match redlock.lock("orders:42").once().await {
        Err(e) if e.class() == ErrorClass::Busy => println!("second owner refused: {e}"),
        other => return Err(format!("a second owner got in: {other:?}").into()),
    }

    // 5. Need more time? Extend before it runs out; validity is recomputed from the extend's start.
    guard.extend(Duration::from_secs(20)).await?;
    println!("extended: {:?} left", guard.remaining());

    // 6. Release (owner-checked on every node) and see how it went.
    guard.release().await?;
    println!("released");

    // 7. Or let the guard go out of scope: it is released at once, in the background.
    {
        let _guard = redlock.lock("orders:43").await?;
    }
    let again = redlock.lock("orders:43").once().await?;
    println!("a dropped guard released orders:43: taken again at once");
    again.release().await?;
    Ok(())
}
