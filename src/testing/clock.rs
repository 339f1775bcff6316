//! A memory node's wall clock: this machine's, plus an offset a test can step. Everything on the node
//! reads it — `TIME`, key expiry (absolute, in its ms, as Redis stores it), `uptime_in_seconds` —
//! so a step moves them together, as an operator's or NTP's step does on a real server: forward,
//! keys expire early; back, they live longer than their TTL.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The node's clock (see the module doc).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Clock {
    offset_us: i64,
}

impl Clock {
    /// Microseconds since 1970 on this node.
    pub(crate) fn now_us(&self) -> i64 {
        let real = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_micros() as i64;
        real.saturating_add(self.offset_us)
    }

    /// Milliseconds since 1970 on this node: the unit keys expire in.
    pub(crate) fn now_ms(&self) -> i64 {
        self.now_us().div_euclid(1000)
    }

    /// Steps the clock by `by` microseconds (negative: back).
    pub(crate) fn step(&mut self, by: i64) {
        self.offset_us = self.offset_us.saturating_add(by);
    }
}
