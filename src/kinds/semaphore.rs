//! Counting semaphores: at most K holders of a resource at once ("at most 3 exports"), each holding a
//! **permit** that behaves like a lock — validity, release, extend, renewal, scoped use.
//!
//! # The quorum: a majority is not enough for K >= 2
//! Each node admits at most K live permits per resource. A holder counts its permit as held once
//! `q` nodes admitted it. If K+1 holders were valid at one instant, each would have a live permit on
//! `q` nodes, so the nodes would hold `(K+1)·q` live permits between them, at most K each: `(K+1)·q
//! <= K·N`. So K+1 valid holders are impossible exactly when `(K+1)·q > K·N`, i.e.
//! `q > K·N/(K+1)`, and the smallest such quorum is **`q = floor(K·N/(K+1)) + 1`**
//! ([`crate::__private::permit_quorum`]). It is tight: with `q - 1 = floor(K·N/(K+1))` nodes each,
//! K+1 holders placed round-robin over the N nodes put at most `ceil((K+1)(q-1)/N) <= K` permits on
//! any node. For K = 1 it is the majority; with a majority and K = 2, N = 5, three holders fit
//! (3·3 = 9 <= 2·5). `tests/semaphore_quorum.rs` checks both claims over every spread of K+1 holders.
//!
//! **Availability cost**: a permit needs `q` answering nodes, so `N - q` nodes may be down. For N = 5:
//! K = 1 → 3 (2 may fail), K = 2 or 3 → 4 (1 may fail), K >= 4 → 5 (none may fail); every K >= N needs
//! every node. The alternative that keeps a majority — K named slots, each an exclusive lock — keeps
//! the Redlock availability but costs up to K attempts when most slots are busy; `docs/guide.md` compares
//! both, and `results/README.md` has the measurements.
//!
//! # Keys per node, and why every time comparison is safe
//! `prefix{resource}` holds the marker `permits:<K>` and `prefix{resource}:sem` a sorted set of the
//! live permits, each permit's (random, secret) value scored by its expiry on the **node's** clock
//! (`TIME` in ms). Both keys carry a `PEXPIRE` at least as long as their longest permit, so a resource
//! whose holders all died leaves nothing behind. A node never admits a permit while K permits scored
//! in the future are there (expired ones are pruned first), and an extend never revives a permit whose
//! score has passed, so at every instant a node holds at most K live permits.
//!
//! The comparisons are `score <= now` (pruning and extend: a permit is dead from its score on) and
//! `score = floor(now) + ttl` (admit and extend). `floor` makes a permit live at least `ttl - 1 ms`
//! after the script ran, which is after the client's round started; the client's validity is at most
//! `ttl - drift` with `drift >= 2 ms` (`algo::timing`), so **no holder counts a permit that its node
//! has already dropped**: a valid holder's permits are live on its `q` nodes, which is what the
//! argument above needs. Only one node's clock is ever compared with itself, so clocks of different
//! nodes need not agree. The same assumptions as any lock remain: a node whose wall clock jumps forward
//! drops permits early (the clock guard reads `TIME` before every acquire script), and a node restarted
//! without data forgets them (quarantine keeps it from voting).
//!
//! # Callers that disagree on K
//! The marker is how a node detects them: an acquire asking for a K other than the marker's is
//! refused on that node, and any such refusal loses the round ([`LockError::PermitsMismatch`], not
//! retried). The marker lives as long as a permit does, so a new K can be used once the last permit
//! is released or expired. An exclusive lock (or writer) on the same resource is refused while
//! permits are held, and a semaphore acquire while the resource is held as a lock.
//!
//! Cost: one round trip per attempt, release and extend, like a plain lock. No release notifications:
//! waiters retry at their retry pause.
//!
//! # Split votes, and the local gate
//! Attempts that arrive together reach the nodes in different orders, so each node admits a different
//! K of them and none may reach `q` nodes: all release and retry. With 64 contenders that livelocks
//! (15-20 grants/s in `examples/permits_vs_slots.rs`). So at most K tasks of one engine attempt a
//! semaphore at once; the others wait their turn locally (FIFO, tokio's fair semaphore), which
//! bounds the contenders on the nodes by K per process.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::algo::quorum::{permit_quorum, Vote};
use crate::algo::retry::Wait;
use crate::algo::value::LockValue;
use crate::engine::Redlock;
use crate::error::{LockError, NodeError};
use crate::kinds::base::BASE;
use crate::lock::Lock;
use crate::protocol::cmd::{script_cmd, Args, Cmd, Keys, NodeResult, Op, Reply, Script};
use crate::protocol::inspect::{count, maybe_count, InspectPart, KeyState};
use crate::protocol::scripts::{node_now, HOLDS_MEMBER};
use crate::protocol::spec::{Forced, Kind, LockKind, Spec, Suffix};

/// The most permits one semaphore may have. Any K >= N already needs every node, so the cap costs
/// nothing real; it turns a count that is a bug (a byte count passed as permits) into an error, and
/// bounds the per-node set each acquire prunes and counts.
pub const MAX_PERMITS: u32 = 1024;

/// A permit of a semaphore of K permits (the kind's `arg`).
pub(crate) static SEMAPHORE: Spec = Spec {
    name: "semaphore",
    code: b'p',
    acquire: acquire_permit_cmd,
    vote: permit_vote,
    quorum: |nodes, permits| permit_quorum(nodes, permits),
    release: &RELEASE_PERMIT,
    release_notify: &RELEASE_PERMIT,
    extend: &EXTEND_PERMIT,
    holds: &HOLDS_MEMBER,
    extends_first_key: false,
    suffixes: &[Suffix {
        name: b":sem",
        forced: Forced::Kept,
    }],
    marks: &[],
    // Holders share the resource: nobody to wait behind locally, nothing to hand off.
    queues_locally: false,
    hands_off: false,
    scripts: &[&ACQUIRE_PERMIT, &RELEASE_PERMIT, &EXTEND_PERMIT],
    inspect: &[&PERMITS],
    ..BASE
};

/// Inspect's part: live permits, and the K of the marker `permits:<K>` at the resource's key (`-`:
/// none). The marker is no lock value: where it stands, the resource is this kind's.
static PERMITS: InspectPart = InspectPart {
    lua: "local n, k = 0, '-' if ty(K[':sem']) == 'zset' then \
n = redis.call('ZCOUNT', K[':sem'], '(' .. now, '+inf') end \
if v and string.match(v, '^permits:%d+$') then k = string.sub(v, 9) end \
out[#out + 1] = n out[#out + 1] = k",
    fields: 2,
    read: read_permits,
};

fn read_permits(fields: &[&[u8]], state: &mut KeyState) -> Option<()> {
    state.permits = count(fields[0])?;
    state.permit_limit = maybe_count(fields[1])?;
    if state.permit_limit.is_some() {
        state.kind = Some(LockKind::of(&SEMAPHORE));
    }
    Some(())
}

fn acquire_permit_cmd(keys: &Keys, value: LockValue, ttl_ms: u64, permits: u64) -> Cmd {
    script_cmd(&ACQUIRE_PERMIT, keys, value, Args::of(&[ttl_ms, permits]))
}

impl Redlock {
    /// Acquires one of `permits` permits of the semaphore `resource` for `ttl`, retrying like
    /// [`acquire`](Self::acquire). The permit is a [`Lock`]: check its validity, and release, extend
    /// or [`renew`](Self::renew) it like any lock. At most `permits` holders have a valid permit at
    /// once, provided every caller of `resource` asks for the same `permits`.
    ///
    /// A permit needs `floor(K·N/(K+1)) + 1` nodes, not a majority (see the module doc): with 5 nodes,
    /// 4 for K = 2 or 3, all 5 from K = 4 on.
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// use std::time::Duration;
    /// let permit = redlock.acquire_permit(b"exports", 3, Duration::from_secs(30)).await?;
    /// // ... one of at most three exports running at once ...
    /// redlock.release(permit).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire) ([`LockError::Contended`] when every permit is taken on too many
    /// nodes); [`LockError::InvalidInput`] for `permits` 0 or above [`MAX_PERMITS`];
    /// [`LockError::PermitsMismatch`] if a node holds the resource with another permit count.
    #[deprecated(
        since = "0.2.0",
        note = "use `redlock.lock(resource).permits(k).ttl(ttl)`: a `LockGuard`, released on drop"
    )]
    pub async fn acquire_permit(
        &self,
        resource: impl AsRef<[u8]>,
        permits: u32,
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        self.permit(resource.as_ref(), permits, ttl, Wait::Configured)
            .await
    }

    /// A permit, waiting as `wait` says (the request's `.permits(k)`).
    pub(crate) async fn permit(
        &self,
        resource: &[u8],
        permits: u32,
        ttl: Duration,
        wait: Wait,
    ) -> Result<Lock, LockError> {
        let target = self.core().target(permit_kind(permits)?, resource)?;
        let s = self.core().settings();
        let ttl = self.core().check_ttl(ttl)?;
        let began = tokio::time::Instant::now();
        let gate = gate(self, &target.keys.as_slice()[0], permits);
        let local = || LockError::Contended {
            taken: 0,
            nodes: self.node_count(),
            local: true,
            retry_after: None,
            holder: None,
        };
        let turn = if wait.retries() {
            // Waiting for the gate spends the acquire's budget too; running out of it there is
            // what the local queue of a plain lock says (`Timeout` only with a deadline).
            let deadline = wait.deadline(began, s.acquire_timeout);
            let budget = s.retry.budget(s.timing.node_timeout(ttl));
            // A gate is closed only by the engine's shutdown (`Gates::close`).
            match wait.budget_end(deadline, began, budget) {
                None => gate.acquire().await.map_err(|_| LockError::Closed)?,
                Some(until) => match tokio::time::timeout_at(until, gate.acquire()).await {
                    Ok(Err(_)) => return Err(LockError::Closed),
                    Ok(Ok(turn)) => turn,
                    _ if deadline.is_some() => {
                        return Err(LockError::Timeout {
                            attempts: 0,
                            last: None,
                        })
                    }
                    _ => return Err(local()),
                },
            }
        } else {
            // K tasks of this engine are attempting already: one more would only split the votes.
            gate.try_acquire().map_err(|_| local())?
        };
        // One deadline for the gate and the attempts together, not one each.
        let result = self
            .core()
            .acquire_since(target.clone(), ttl, wait, began)
            .await;
        drop(turn);
        let result = match result {
            Err(err) => Err(self.core().busy(&target, ttl, err).await),
            granted => granted,
        };
        result.map_err(|e| with_count(e, permits))
    }
}

/// This engine's gate for `key` with `permits`: at most K of its tasks attempt at once.
fn gate(engine: &Redlock, key: &bytes::Bytes, permits: u32) -> Arc<Semaphore> {
    engine.core().gates().get(key, permits)
}

/// The kind of a permit of a semaphore of `permits`, refused when the count is unusable.
fn permit_kind(permits: u32) -> Result<Kind, LockError> {
    if permits == 0 {
        return Err(LockError::InvalidInput(
            "a semaphore needs at least one permit".into(),
        ));
    }
    if permits > MAX_PERMITS {
        return Err(LockError::InvalidInput(format!(
            "{permits} permits is above the limit of {MAX_PERMITS}"
        )));
    }
    Ok(Kind::new(&SEMAPHORE, u64::from(permits)))
}

/// Fills in the caller's own count, which only this kind knows (the tally saw the node's).
fn with_count(err: LockError, permits: u32) -> LockError {
    match err {
        LockError::PermitsMismatch { found, .. } => LockError::PermitsMismatch { permits, found },
        other => other,
    }
}

/// Reads a permit acquire reply: `1` admitted, `-1` full (or held as another kind of lock),
/// `M<K>` held as a semaphore of K permits.
fn permit_vote(result: NodeResult) -> Vote {
    match result {
        Ok(Reply::Data(d)) if d.first() == Some(&b'M') => {
            match std::str::from_utf8(&d[1..])
                .ok()
                .and_then(|s| s.parse().ok())
            {
                Some(found) => Vote::Mismatch(found),
                None => Vote::Failed(NodeError::Protocol(
                    "permit acquire script: bulk string is not M<permits>".into(),
                )),
            }
        }
        other => Vote::of_script(other),
    }
}

// Semaphores. KEYS: [1] the marker `permits:<K>` (a string), [2] the permits (sorted set: permit
// value -> expiry in the node's ms clock). ARGV: [1] permit value, [2] TTL ms, [3] K. Why the node's
// `TIME` is safe here: see the module doc.

/// Permit acquire: refused on a marker of another K (`M<K>`, digits only: a lock value sitting at
/// the key is never echoed) or of another kind of lock (`-1`), and while K live permits are there.
pub(crate) static ACQUIRE_PERMIT: Script = Script {
    source: concat!(
        node_now!(),
        "local want = 'permits:' .. ARGV[3] local m = redis.call('GET', KEYS[1]) \
if m and m ~= want then local k = string.match(m, '^permits:(%d+)$') \
if k then return 'M' .. k end return -1 end \
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) \
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return -1 end \
local ttl = tonumber(ARGV[2]) \
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1]) \
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end \
if m == false or redis.call('PTTL', KEYS[1]) < ttl then redis.call('SET', KEYS[1], want, 'PX', ttl) end \
return 1"
    ),
    sha1: "f5fdbd347633e3f2c4b68d6c4466c3a390342bfd",
    resend: false,
    op: Op::Own,
};

/// Permit release: remove our permit (`1` if it was still live, `0` if gone or expired); the last
/// live permit out also removes the marker, so the resource is free for any K at once.
pub(crate) static RELEASE_PERMIT: Script = Script {
    source: concat!(
        node_now!(),
        "local s = redis.call('ZSCORE', KEYS[2], ARGV[1]) \
if s == false then return 0 end redis.call('ZREM', KEYS[2], ARGV[1]) \
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) \
if redis.call('ZCARD', KEYS[2]) == 0 then local m = redis.call('GET', KEYS[1]) \
if m and string.match(m, '^permits:%d+$') then redis.call('DEL', KEYS[1]) end end \
if tonumber(s) <= now then return 0 end return 1"
    ),
    sha1: "1197812551be759f8b61c473f237171c7b4559f4",
    resend: true,
    op: Op::Own,
};

/// Permit extend: move our permit's expiry (ms in `ARGV[2]`), only while it is still live; both keys
/// live at least as long.
pub(crate) static EXTEND_PERMIT: Script = Script {
    source: concat!(
        node_now!(),
        "local s = redis.call('ZSCORE', KEYS[2], ARGV[1]) \
if s == false or tonumber(s) <= now then return 0 end \
local ttl = tonumber(ARGV[2]) \
redis.call('ZADD', KEYS[2], 'XX', now + ttl, ARGV[1]) \
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end \
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end \
return 1"
    ),
    sha1: "e10d5533d1494f18b58fd4feaf53486dd6297c20",
    resend: true,
    op: Op::Own,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_outside_one_to_the_cap_are_refused() {
        assert!(matches!(permit_kind(0), Err(LockError::InvalidInput(_))));
        assert!(matches!(
            permit_kind(MAX_PERMITS + 1),
            Err(LockError::InvalidInput(_))
        ));
        assert!(permit_kind(MAX_PERMITS).is_ok());
        assert_eq!(permit_kind(2).unwrap().tally(5).quorum(), 4);
    }

    #[test]
    fn reads_replies() {
        use bytes::Bytes;
        let data = |s: &'static str| Ok(Reply::Data(Bytes::from_static(s.as_bytes())));
        assert_eq!(permit_vote(data("M3")), Vote::Mismatch(3));
        assert!(matches!(permit_vote(data("Mx")), Vote::Failed(_)));
        assert_eq!(permit_vote(Ok(Reply::Int(1))), Vote::Yes);
        assert_eq!(permit_vote(Ok(Reply::Int(-1))), Vote::Taken);
    }
}
