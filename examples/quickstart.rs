//! Take, use and release a lock on one local Redis.
//!
//! Run: `cargo run --example quickstart` (Redis at 127.0.0.1:6379), or name the node:
//! `cargo run --example quickstart -- redis://127.0.0.1:7001`.

use std::time::Duration;

use redlock_engine::{ErrorClass, Redlock};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "redis://127.0.0.1:6379".into());

    // One node is the classic single-instance lock; list 3 or 5 independent masters for Redlock.
    let redlock = Redlock::builder()
        .nodes([url])
        // Off only for this test drive on a node that holds no lock anyone relies on: with the
        // default (on), a node up for less than `max_ttl` (60 s) does not vote. Keep it on in
        // production.
        .quarantine(false)
        .build()
        .await?;

    // Wait up to 5 s for the lock; its keys live 10 s unless released or extended.
    let guard = redlock
        .lock("orders:42")
        .ttl(Duration::from_secs(10))
        .wait_up_to(Duration::from_secs(5))
        .await?;
    println!("locked orders:42 for {:?}", guard.remaining());

    // Another caller, here or in another process, is refused while we hold it.
    match redlock.lock("orders:42").once().await {
        Err(e) if e.class() == ErrorClass::Busy => println!("second caller refused: {e}"),
        other => return Err(format!("expected a busy lock, got {other:?}").into()),
    }

    // ... the work the lock protects, checking `guard.is_valid()` before each step ...

    // Release on every node (dropping the guard would release it too, in the background).
    guard.release().await?;
    println!("released");
    Ok(())
}
