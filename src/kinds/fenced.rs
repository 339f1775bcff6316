//! Fencing tokens: a `u64` per grant such that, for any two holders of a resource one after the other,
//! the later one's token is larger — so a storage system that rejects writes carrying a smaller token
//! than it has seen stops a paused, expired holder from writing after its lease ended.
//!
//! # Protocol (two round trips in the common case)
//! 1. **Acquire round**: the `SET NX PX` runs in a script that also answers the node's fence counter for
//!    the resource (same round trip). The proposal is `t = max(counters seen) + 1`, raised to the clock
//!    component below.
//! 2. **Commit round**: every node is asked to raise its counter to `t`, only if our lock value is still
//!    there and only upward. A node whose counter is already `>= t` answers CONFLICT with its counter;
//!    conflicts start a new commit round with a higher `t` (at most [`COMMIT_ROUNDS`]). The token is
//!    usable only when a majority confirmed within the lock's validity.
//!
//! # Why tokens increase
//! Let A hold the resource, then B. A's commit reached a majority M_A before A's validity ended (A does
//! not hand out its token otherwise), hence before B's lock began: B's keys could only be set after A's
//! had expired or been released on a majority. B's commit reached a majority M_B after that. M_A and
//! M_B intersect in some node n. On n, A's commit raised the counter to t_A before B's commit arrived,
//! and a counter only goes up, so B's commit on n either found counter `< t_B` (then `t_B > t_A`, since
//! n's counter was already `>= t_A`) or answered CONFLICT — and B never uses a `t_B` that a node of its
//! majority refused. Hence `t_B > t_A`.
//!
//! Both guards in the commit matter (a bounded model check of this design found a repeated token with
//! neither): "only while my lock value is there" keeps a holder whose lock expired from raising counters
//! after the next holder committed; CONFLICT keeps a holder from using a token below a counter it
//! could not raise. `tests/fencing_model.rs` simulates the protocol under message delay and loss.
//!
//! # Assumptions, and counter loss
//! Counters live on the nodes without TTL. A node restarted without persistence loses them, which the
//! argument above does not cover: keep such nodes out of quorums until their counter has been raised by
//! a committed round (crashed-node quarantine), or make counters durable (`appendfsync always`). To
//! survive counter loss on a majority, proposals are at least `(wall-clock ms) * 1000`: a
//! `(ms, sequence)` pair with 1 000 tokens per millisecond. That part assumes client clocks agree to
//! better than the gap between two holders, and never step back; after a majority lost its counters
//! with clocks not meeting that, reseed the counters above any token ever issued.
//!
//! # Tokens survive JSON
//! A token is below 2^53 until the year 2255 (`ms * 1000`), so it is exact as a JSON number read into a
//! double, a JavaScript number and a Lua number. Counters that an earlier version of this crate
//! raised to `ms << 16` (above 2^53) keep their tokens above it, since tokens only grow: such a
//! deployment sends them as strings (every `u64` token is also exact as a 20-digit decimal string,
//! which is how [`crate::FencedStore`] compares them).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use crate::algo::quorum::Vote;
use crate::algo::retry::Wait;
use crate::algo::value::LockValue;
use crate::engine::release::HeldGuard;
use crate::engine::Redlock;
use crate::error::{LockError, NodeError};
use crate::kinds::base::{BASE, WAITERS};
use crate::lock::Lock;
use crate::observe::Op;
use crate::protocol::cmd::{script_cmd, Args, Cmd, Keys, NodeResult, Reply, Script};
use crate::protocol::inspect::{maybe_count, InspectPart};
use crate::protocol::spec::{Forced, Kind, Spec, Suffix};

/// An exclusive lock whose acquire also reads the resource's fence counter on every node, for a
/// fencing token committed afterwards.
pub(crate) static FENCED: Spec = Spec {
    name: "fenced",
    code: b'f',
    acquire: acquire_fenced_cmd,
    vote: fenced_set_vote,
    suffixes: &[Suffix {
        name: b":fence",
        forced: Forced::Kept,
    }],
    // Its token belongs to one holder: the next holder needs a larger one.
    hands_off: false,
    scripts: &[&ACQUIRE_FENCED, &COMMIT_FENCE],
    inspect: &[&WAITERS, &FENCE],
    ..BASE
};

/// Inspect's part: the fence counter (`-` where there is none), `KeyState::fence`.
static FENCE: InspectPart = InspectPart {
    lua:
        "local f = '-' if ty(K[':fence']) == 'string' then f = redis.call('GET', K[':fence']) end \
out[#out + 1] = f",
    fields: 1,
    read: |f, s| {
        s.fence = maybe_count(f[0])?;
        Some(())
    },
};

fn acquire_fenced_cmd(keys: &Keys, value: LockValue, ttl_ms: u64, _: u64) -> Cmd {
    script_cmd(&ACQUIRE_FENCED, keys, value, Args::of(&[ttl_ms]))
}

/// Most commit rounds one fenced acquire makes before giving up (each conflict raises the proposal to
/// above every counter seen, so a second round normally suffices).
pub const COMMIT_ROUNDS: u32 = 3;

impl Redlock {
    /// Acquires `resource` like [`acquire`](Self::acquire), then commits a fencing token
    /// ([`Lock::fencing_token`]): one extra round trip.
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// use std::time::Duration;
    /// let lock = redlock.acquire_fenced(b"ledger", Duration::from_secs(5)).await?;
    /// let token = lock.fencing_token().expect("fenced locks carry a token");
    /// // Every write the lock protects carries the token; the store refuses a lower one.
    /// let store = redlock.fenced_store("redis://127.0.0.1:6390").await?;
    /// store.set("ledger:balance", "100", token).await?;
    /// redlock.release(lock).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire); [`LockError::FenceNotCommitted`] if no commit won a majority
    /// within the validity (the lock is then released).
    #[deprecated(
        since = "0.2.0",
        note = "use `redlock.lock(resource).fenced().ttl(ttl)`: a `LockGuard`, released on drop"
    )]
    pub async fn acquire_fenced(
        &self,
        resource: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        self.fenced(resource.as_ref(), ttl, Wait::Configured).await
    }

    /// A fenced lock, waiting as `wait` says (the request's `.fenced()`).
    pub(crate) async fn fenced(
        &self,
        resource: &[u8],
        ttl: Duration,
        wait: Wait,
    ) -> Result<Lock, LockError> {
        let target = self.core().target(Kind::new(&FENCED, 0), resource)?;
        let lock = self.core().acquire(target, ttl, wait).await?;
        self.commit_fence(lock).await
    }

    async fn commit_fence(&self, lock: Lock) -> Result<Lock, LockError> {
        let core = self.core();
        // Released if no token is committed, or if this future is dropped mid-commit.
        let mut guard = HeldGuard::new(core, lock);
        let lock = guard.lock_mut();
        let mut floor = lock.fence_floor();
        let mut rounds = 0;
        while rounds < COMMIT_ROUNDS {
            rounds += 1;
            let Ok(_slot) = core.admit(Some(lock.valid_until())).await else {
                break;
            };
            let start = Instant::now();
            if start >= lock.valid_until() {
                break;
            }
            let token = propose(floor);
            let cmd = script_cmd(&COMMIT_FENCE, lock.keys(), lock.value(), Args::of(&[token]));
            let deadline = core.round_deadline(start, lock.ttl(), Some(lock.valid_until()));
            let tally = core.fan_out(&cmd, deadline, fence_commit_vote).await;
            core.metrics().round(Op::Fence, &tally, start.elapsed());
            // Usable only if the majority confirmed while the lock was still valid.
            if tally.won() && Instant::now() < lock.valid_until() {
                lock.set_fence(token);
                return Ok(guard.keep());
            }
            if tally.conflicts == 0 {
                break;
            }
            floor = floor.max(tally.max_counter);
        }
        Err(LockError::FenceNotCommitted { rounds })
    }
}

/// The proposal above `floor`: `max(floor + 1, wall-clock ms * 1000)` (below 2^53 until 2255).
///
/// Why reading the wall clock here is safe: the clock only raises a proposal, it never decides a
/// token. Monotonicity comes from the counters (`floor + 1`) and the commit's CONFLICT guard, whatever
/// value the clock gives — a clock that is truncated to the millisecond, stepped back, or far ahead
/// changes which token is proposed, not whether a majority must accept it above every counter it holds.
/// The clock component only matters after a majority lost its counters (see the module doc).
pub(crate) fn propose(floor: u64) -> u64 {
    let clock = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| {
        u64::try_from(d.as_millis())
            .unwrap_or(u64::MAX)
            .saturating_mul(1000)
    });
    floor.saturating_add(1).max(clock)
}

/// Reads a fenced acquire reply: `+<counter>` (set) or `-<counter>:<pttl>` (taken; a negative
/// `pttl`, no expiry, reads as none).
fn fenced_set_vote(result: NodeResult) -> Vote {
    let bad = || {
        Vote::Failed(NodeError::Protocol(
            "fenced acquire script: bulk string is not +<counter> or -<counter>:<pttl>".into(),
        ))
    };
    let d = match result {
        Ok(Reply::Data(d)) => d,
        Ok(other) => return Vote::Failed(other.unexpected("fenced acquire script")),
        Err(e) => return Vote::Failed(e),
    };
    match d.first() {
        Some(b'+') => d
            .get(1..)
            .and_then(parse_counter)
            .map_or_else(bad, Vote::YesAt),
        Some(b'-') => {
            let rest = &d[1..];
            let Some(colon) = rest.iter().position(|&b| b == b':') else {
                return bad();
            };
            let ttl = std::str::from_utf8(&rest[colon + 1..])
                .ok()
                .and_then(|t| t.parse::<i64>().ok());
            match (parse_counter(&rest[..colon]), ttl) {
                (Some(c), Some(ttl)) => Vote::TakenAt(c, u64::try_from(ttl).ok()),
                _ => bad(),
            }
        }
        _ => bad(),
    }
}

/// Reads a fence commit reply: `1` raised, `C<counter>` conflict, else as [`of_script`](Vote::of_script).
fn fence_commit_vote(result: NodeResult) -> Vote {
    match result {
        Ok(Reply::Data(d)) if d.first() == Some(&b'C') => {
            match d.get(1..).and_then(parse_counter) {
                Some(c) => Vote::Conflict(c),
                None => Vote::Failed(NodeError::Protocol(
                    "fence commit script: bulk string is not C<counter>".into(),
                )),
            }
        }
        other => Vote::of_script(other),
    }
}

fn parse_counter(digits: &[u8]) -> Option<u64> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}

// Fencing. KEYS: [1] lock key, [2] the resource's fence counter (no TTL; a 20-digit zero-padded
// decimal, so Lua's string comparison is numeric comparison and no counter passes through a double).

/// Fenced acquire: `SET NX PX`, answering `+<counter>` (set) or `-<counter>:<pttl>` (taken) with the
/// node's fence counter and the holder key's time to live, in the same round trip (a waiter retries
/// when the holder's keys expire instead of up to a pause later: `Tally::free_in`).
pub(crate) static ACQUIRE_FENCED: Script = Script {
    source: "local c = redis.call('GET', KEYS[2]) or '0' \
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return '+' .. c end \
return '-' .. c .. ':' .. redis.call('PTTL', KEYS[1])",
    sha1: "93b2bc158246ececca7970bca5c7f243dcb69cc7",
    resend: false,
    op: crate::protocol::cmd::Op::Own,
};

/// Fence commit: raise the counter to the proposal `ARGV[2]`, only while our lock value is there and
/// only upward; `C<counter>` when the node is already at or above it.
pub(crate) static COMMIT_FENCE: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v ~= ARGV[1] then if v == false then return 0 end return -1 end \
local t = string.rep('0', 20 - #ARGV[2]) .. ARGV[2] \
local c = redis.call('GET', KEYS[2]) \
if c and c >= t then return 'C' .. c end \
redis.call('SET', KEYS[2], t) return 1",
    sha1: "61781927340d957dd626264402250b366d377508",
    resend: false,
    op: crate::protocol::cmd::Op::Own,
};

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn a_taken_reply_says_the_counter_and_the_holders_time_left() {
        let vote =
            |s: &'static str| fenced_set_vote(Ok(Reply::Data(Bytes::from_static(s.as_bytes()))));
        assert_eq!(vote("+00000000000000000042"), Vote::YesAt(42));
        assert_eq!(
            vote("-00000000000000000042:950"),
            Vote::TakenAt(42, Some(950))
        );
        // No expiry: nothing to wait out.
        assert_eq!(vote("-0:-1"), Vote::TakenAt(0, None));
        for bad in ["-42", "-x:1", "-4:x", "*1", ""] {
            assert!(matches!(vote(bad), Vote::Failed(_)), "{bad}");
        }
    }

    #[test]
    fn proposals_exceed_the_floor_and_follow_the_clock() {
        let now = propose(0);
        // Milliseconds since 1970 times 1000: past 2026 (1.76e15), and below 2^53 (JSON-safe).
        assert!(now > 1_760_000_000_000_000, "clock component: {now}");
        assert!(now < 1 << 53, "exact as a double: {now}");
        assert_eq!(propose(u64::MAX - 5), u64::MAX - 4);
        assert_eq!(propose(u64::MAX), u64::MAX, "saturates, never wraps");
        let later = propose(now);
        assert!(later > now);
    }
}
