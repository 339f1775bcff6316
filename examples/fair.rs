//! A fair lock: granted in arrival order across processes, not to whichever waiter retries at the
//! luckiest moment. Each waiter here has its own engine, as separate processes would.
//!
//! Run: `cargo run --example fair` (starts three redis-server nodes, or set `REDLOCK_NODES`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

mod support;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (urls, servers) = support::nodes()?;
    let ttl = Duration::from_secs(10);

    // 1. Someone holds the printer.
    let holder = support::builder(&urls, &servers).build().await?;
    let printing = holder.lock("printer").fair().ttl(ttl).once().await?;
    println!("holder: printing");

    // 2. Four clients arrive 50 ms apart and queue for it (each waits up to 10 s).
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for n in 0..4 {
        let client = support::builder(&urls, &servers).build().await?;
        let order = order.clone();
        waiters.push(tokio::spawn(async move {
            let request = client.lock("printer").fair().ttl(ttl);
            let guard = request.wait_up_to(Duration::from_secs(10)).await?;
            println!("client {n}: printing");
            order.lock().unwrap().push(n);
            tokio::time::sleep(Duration::from_millis(20)).await;
            guard.release().await
        }));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let queued = holder.inspect("printer").await?;
    let queued = queued.nodes.iter().flat_map(|n| n.state.as_ref().ok());
    println!(
        "queued on each node: {:?}",
        queued.map(|s| s.fair_waiters).collect::<Vec<_>>()
    );

    // 3. The holder finishes: the lock goes to the clients in the order they arrived.
    printing.release().await?;
    for waiter in waiters {
        waiter.await??;
    }
    let order = order.lock().unwrap().clone();
    println!("served in order {order:?}");
    if order != [0, 1, 2, 3] {
        return Err("not served in arrival order".into());
    }
    Ok(())
}
