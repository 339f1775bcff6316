//! Long work under a short TTL: the watchdog renews the lock, and the work stops if it is lost.
//!
//! Run: `cargo run --example renew` (starts three redis-server nodes, or set `REDLOCK_NODES`).

use std::time::Duration;

use redlock_engine::RenewPolicy;

mod support;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (redlock, _servers) = support::engine().await?;

    // 1. A 900 ms TTL, renewed every 300 ms by the engine's watchdog (one batched write per node).
    let lock = redlock
        .lock("report:2026-11")
        .ttl(Duration::from_millis(900))
        .renewed(RenewPolicy::default())
        .await?;

    // 2. Work for 3 s — three times the TTL — stopping at once if a renewal ever fails.
    tokio::select! {
        _ = lock.lost() => return Err("lock lost: stop writing".into()),
        _ = tokio::time::sleep(Duration::from_secs(3)) => println!("done after {} renewals", lock.renewals()),
    }

    // 3. Scoped form: acquire, renew, release — also on error or panic.
    let rows = redlock
        .lock(b"report:2026-12")
        .ttl(Duration::from_millis(900))
        .with(|ctx| async move {
            let mut rows = 0;
            for _ in 0..20 {
                if ctx.is_lost() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                rows += 1;
            }
            rows
        })
        .await?;
    println!("the scoped form wrote {rows} rows");

    lock.release().await?;
    Ok(())
}
