//! Fencing tokens: a store that rejects stale tokens stops a paused, expired holder from writing.
//!
//! Run: `cargo run --example fenced` (starts three redis-server nodes, or set `REDLOCK_NODES`).

use std::time::Duration;

mod support;

/// A toy store that remembers the highest token it accepted.
#[derive(Default)]
struct Store {
    highest: u64,
    value: String,
}

impl Store {
    fn write(&mut self, token: u64, value: &str) -> Result<(), String> {
        if token < self.highest {
            return Err(format!("rejected: token {token} < {}", self.highest));
        }
        self.highest = token;
        self.value = value.to_string();
        Ok(())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (redlock, _servers) = support::engine().await?;
    let mut store = Store::default();

    // 1. Client 1 takes the lock with a short TTL, then "pauses" past it (GC, SIGSTOP, swap...).
    let old = redlock
        .lock("ledger")
        .fenced()
        .ttl(Duration::from_millis(200))
        .await?;
    tokio::time::sleep(Duration::from_millis(300)).await;

    // 2. Client 2 takes the lock meanwhile and writes with its (larger) token.
    let new = redlock
        .lock("ledger")
        .fenced()
        .ttl(Duration::from_secs(5))
        .await?;
    store.write(new.fencing_token().unwrap(), "from client 2")?;

    // 3. Client 1 wakes up and tries to write: the store refuses its stale token.
    match store.write(old.fencing_token().unwrap(), "from client 1") {
        Err(why) => println!("stale write {why}"),
        Ok(()) => return Err("stale write accepted".into()),
    }
    println!("store holds {:?}", store.value);
    new.release().await?;
    // Client 1's guard releases when dropped: owner-checked, it leaves client 2's lock alone.
    drop(old);
    Ok(())
}
