//! A read-write lock: many readers at once, or one writer. A waiting writer holds new readers back,
//! so a steady stream of readers cannot starve it.
//!
//! Run: `cargo run --example read_write` (starts three redis-server nodes, or set `REDLOCK_NODES`).

use std::time::Duration;

use redlock_engine::ErrorClass;

mod support;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Two engines on the same nodes, as two services would have: one reads the catalog, one writes it.
    let (urls, servers) = support::nodes()?;
    let readers = support::builder(&urls, &servers).build().await?;
    let writer = support::builder(&urls, &servers).build().await?;
    let ttl = Duration::from_secs(10);

    // 1. Three readers hold "catalog" at once.
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(readers.lock("catalog").read().ttl(ttl).once().await?);
    }
    println!("{} readers hold catalog together", held.len());

    // 2. The writer cannot get in while they read; it waits (up to 5 s) in the background.
    let waiting = tokio::spawn(async move {
        let request = writer.lock("catalog").write().ttl(ttl);
        let guard = request.wait_up_to(Duration::from_secs(5)).await?;
        println!("writer: got catalog, readers gone");
        guard.release().await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;

    // 3. Meanwhile a new reader is held back: the waiting writer goes first.
    match readers.lock("catalog").read().ttl(ttl).once().await {
        Err(e) if e.class() == ErrorClass::Busy => println!("new reader held back: {e}"),
        other => {
            return Err(format!("a reader got in ahead of the waiting writer: {other:?}").into())
        }
    }

    // 4. The readers finish; the writer gets the lock, writes, releases.
    for guard in held {
        guard.release().await?;
    }
    println!("readers released");
    waiting.await??;

    // 5. Readers are welcome again.
    let reader = readers.lock("catalog").read().ttl(ttl).once().await?;
    println!("reader after the writer: ok");
    reader.release().await?;
    Ok(())
}
