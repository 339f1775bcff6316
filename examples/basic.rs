//! Acquire, extend and release a lock on three redis-server nodes this example starts itself.
//!
//! Run: `cargo run --example basic` (needs `redis-server` on the PATH), or point it at your own nodes:
//! `REDLOCK_NODES=redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003 cargo run --example basic`.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use redlock_engine::{LockError, Redlock};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. Nodes: yours from REDLOCK_NODES, or three throwaway ones on free loopback ports.
    let (urls, _servers) = match std::env::var("REDLOCK_NODES") {
        Ok(list) => (
            list.split(',').map(str::to_string).collect(),
            Servers(Vec::new()),
        ),
        Err(_) => start_nodes(3)?,
    };

    // 2. The engine: one pipelined connection per node.
    let redlock = Redlock::builder().nodes(urls).build().await?;

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
        Err(LockError::Contended { taken, nodes, .. }) => {
            println!("second owner refused: taken on {taken} of {nodes}")
        }
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

/// Child redis-server processes, killed on drop.
struct Servers(Vec<Child>);

impl Drop for Servers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start_nodes(n: usize) -> Result<(Vec<String>, Servers), Box<dyn std::error::Error>> {
    let mut servers = Servers(Vec::new());
    let mut urls = Vec::new();
    for _ in 0..n {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start redis-server ({e}); install it: sudo apt-get install -y redis-server"))?;
        servers.0.push(child);
        urls.push(format!("redis://127.0.0.1:{port}"));
        // Wait until it accepts connections.
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Ok((urls, servers))
}
