//! A node round trip, measured in the same run as the failovers: `PING` on one plain connection per
//! server, one at a time, so the failover goal (TTL + 2 round trips) is stated in this run's terms.

use std::time::{Duration, Instant};

use crate::nodes::addr::NodeUrl;
use crate::nodes::probe::{self, Conn};
use crate::stats::{histogram, Percentiles};

/// PINGs per server.
pub const PINGS: usize = 50;

/// `PING` round trips to every server behind `nodes`, `PINGS` each, µs (blocking: runs on a blocking
/// thread).
pub async fn ping_rtt(nodes: Vec<NodeUrl>) -> Result<Percentiles, String> {
    tokio::task::spawn_blocking(move || {
        let timeout = Duration::from_secs(5);
        let mut h = histogram();
        for node in &nodes {
            for server in probe::servers(node, timeout)? {
                let mut conn = Conn::open(&server, timeout)?;
                for _ in 0..PINGS {
                    let start = Instant::now();
                    conn.cmd(&[b"PING"])?;
                    let _ = h.record((start.elapsed().as_micros() as u64).max(1));
                }
            }
        }
        Ok(Percentiles::of(&h))
    })
    .await
    .map_err(|e| format!("the PING reader failed: {e}"))?
}
