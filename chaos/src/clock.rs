//! `CLOCK_MONOTONIC` in nanoseconds: the one clock every process on the machine shares, so grants logged
//! by different client processes can be put on one time line.
//!
//! `std`/`tokio` `Instant` is `CLOCK_MONOTONIC` on Linux but does not expose its raw value, so
//! [`InstantMap`] reads both clocks together once and converts a lock's `valid_until` by adding the
//! difference.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::time::Instant;

/// Nanoseconds on `CLOCK_MONOTONIC` (not affected by wall-clock jumps, nor by libfaketime with
/// `DONT_FAKE_MONOTONIC=1`).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes into `ts`, a valid, exclusively borrowed timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Runs `fut` and also returns when its **first poll** returned (raw ns).
///
/// Why: the engine takes its validity start inside the first poll of an acquire (or extend), before its
/// first await, and no command leaves this single-threaded process before that poll returns. So
/// `first poll end + TTL - drift` is an upper bound on any honest `valid_until`, however long the
/// thread was preempted around the call — unlike the caller's own start time, which precedes the
/// engine's by a preemption now and then (milliseconds on a loaded machine).
pub async fn with_first_poll<F: Future>(fut: F) -> (F::Output, u64) {
    let mut fut = pin!(fut);
    let mut first = None;
    let out = poll_fn(|cx| {
        let r = fut.as_mut().poll(cx);
        first.get_or_insert_with(mono_ns);
        r
    })
    .await;
    (out, first.unwrap_or_else(mono_ns))
}

/// Wall-clock nanoseconds since the Unix epoch (what libfaketime shifts); negative before 1970.
pub fn wall_ns() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i64,
        Err(e) => -(e.duration().as_nanos() as i64),
    }
}

/// Converts `Instant`s to raw `CLOCK_MONOTONIC` nanoseconds.
#[derive(Debug, Clone, Copy)]
pub struct InstantMap {
    base: Instant,
    base_ns: u64,
}

impl InstantMap {
    /// Pairs one `Instant` with one raw reading.
    pub fn new() -> Self {
        // Bracket `Instant::now()` between two raw reads and keep the tightest of a few tries: the
        // conversion is then off by at most half that bracket (tens of nanoseconds).
        let mut best: Option<(u64, Instant, u64)> = None;
        for _ in 0..16 {
            let before = mono_ns();
            let instant = Instant::now();
            let after = mono_ns();
            let width = after - before;
            if best.is_none_or(|(w, _, _)| width < w) {
                best = Some((width, instant, before + width / 2));
            }
        }
        let (_, base, base_ns) = best.expect("at least one try");
        Self { base, base_ns }
    }

    /// `t` as raw `CLOCK_MONOTONIC` nanoseconds.
    pub fn to_ns(self, t: tokio::time::Instant) -> u64 {
        let t = t.into_std();
        match t.checked_duration_since(self.base) {
            Some(after) => self.base_ns + after.as_nanos() as u64,
            None => self.base_ns - (self.base - t).as_nanos() as u64,
        }
    }
}
