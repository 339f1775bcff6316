//! The algorithm in plain Rust: no I/O, no tasks, no engine. Everything here is unit-tested without
//! Redis.
//!
//! - `quorum`: the vote tally and early decision; reading the common reply shapes as votes.
//! - `verdict`: a lost round's tally turned into the error the caller gets.
//! - `timing`: validity = TTL − elapsed − drift, node deadlines.
//! - `retry`: the random pause between attempts, and the time budget of an acquire's retries.
//! - `rtt`: a node's round-trip estimate (smoothed RTT + 4 x variation, as TCP).
//! - `clock`: the clock-jump guard's rule — does a node's wall clock move with our monotonic clock?
//!   (its unit tests in `clock_tests`)
//! - `quarantine`: crashed-node quarantine — no vote from a node younger than `max_ttl` (its unit
//!   tests in `quarantine_tests`).
//! - `keys`: the key layout — `prefix{resource}`, so a lock's keys share one Cluster hash slot.
//! - `reply`: a node's answer reduced to what the algorithm reads ([`reply::Reply`]).
//! - `value`: the lock value — the engine's tag, a kind byte, 128 random bits (a bearer secret,
//!   never printed).

pub(crate) mod clock;
pub(crate) mod keys;
pub(crate) mod quarantine;
pub(crate) mod quorum;
pub(crate) mod reply;
pub(crate) mod retry;
pub(crate) mod rtt;
pub(crate) mod timing;
pub(crate) mod value;
pub(crate) mod verdict;
