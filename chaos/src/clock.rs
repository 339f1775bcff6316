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
    let (out, polls) = with_polls(fut).await;
    (out, polls.first)
}

/// When the polls of one future ended (raw ns).
#[derive(Debug, Clone, Copy)]
pub struct Polls {
    /// The end of the first poll.
    pub first: u64,
    /// The end of the last poll but one; the first poll's end if there was only one.
    pub before_last: u64,
}

/// Runs `fut` and records when its polls ended: see [`Polls`].
///
/// `before_last` bounds a **waiting** acquire, whose winning round may start long after the first
/// poll (after a wait in the local queue, failed rounds, pauses). The engine takes a round's start
/// inside some poll and queues its commands in that same poll; the replies that win it come from each
/// connection's own task, which cannot run during that poll on this single-threaded runtime, so they
/// are read in a later poll. The round's start therefore precedes the end of the last poll but one.
/// The same holds for the extend a local take-over may do. A lock handed over without an extend
/// carries an older start still.
pub async fn with_polls<F: Future>(fut: F) -> (F::Output, Polls) {
    let mut fut = pin!(fut);
    let (mut first, mut last, mut before_last) = (None, None, None);
    let out = poll_fn(|cx| {
        let r = fut.as_mut().poll(cx);
        let now = mono_ns();
        first.get_or_insert(now);
        before_last = last.replace(now);
        r
    })
    .await;
    let first = first.unwrap_or_else(mono_ns);
    (
        out,
        Polls {
            first,
            before_last: before_last.unwrap_or(first),
        },
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn polls_are_timed_in_order() {
        let before = mono_ns();
        let ((), polls) = with_polls(async {
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
        })
        .await;
        let after = mono_ns();
        assert!(
            before <= polls.first && polls.first <= polls.before_last && polls.before_last <= after
        );
        // Three polls: the one but last is not the first.
        assert!(polls.first < polls.before_last);
        let ((), once) = with_polls(async {}).await;
        assert_eq!(once.first, once.before_last);
    }
}
