//! The measured phase both engines run: every lock held for `--hold-for`, the number lost so far
//! sampled once a second.

use std::time::{Duration, Instant};

/// Holds for `hold_for`, pushing `lost()` (the locks lost so far) onto `timeline` every second.
/// Returns how long the hold lasted.
pub async fn hold(
    hold_for: Duration,
    timeline: &mut Vec<u64>,
    mut lost: impl FnMut() -> u64,
) -> Duration {
    let start = Instant::now();
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    ticker.tick().await;
    while start.elapsed() < hold_for {
        let left = hold_for.saturating_sub(start.elapsed());
        tokio::select! {
            _ = ticker.tick() => timeline.push(lost()),
            _ = tokio::time::sleep(left) => {}
        }
    }
    start.elapsed()
}
