//! The fair lock: an exclusive lock granted in **arrival order across processes** — if waiter A's
//! enqueue completed before waiter B's began, A gets the lock before B, unless A gives up, is
//! cancelled or dies (its place is then freed within one TTL). A waiter's enqueue is its ticket
//! round and its add round (steps 1 and 2 below): it **begins with the ticket round**. A's enqueue
//! completing between B's ticket round and B's add round does not order them
//! (`tests/fair_ticket_window.rs` builds that window; B went first in 3-5 of 12 trials). Its waiting
//! loop is `fair_wait`.
//!
//! # Protocol
//! Per node, beside the lock key `prefix{resource}`: a queue `:fair:q` (a sorted set: waiter →
//! ticket; Redis orders equal scores by member bytes, so `(ticket, waiter)` is ordered the same way
//! on every node) and `:fair:exp` (waiter → expiry on the node's clock). The waiter's id is its lock
//! value: 20 random bytes, one for the whole acquire, never printed.
//! 1. **Ticket** (1 round): every node answers its highest live ticket; the waiter needs a majority
//!    of answers and takes `t = max + 1`.
//! 2. **Enqueue** (1 round, also the first try): every node adds `(t, waiter)` with an expiry of one
//!    TTL, then grants the lock key if it is free and the waiter is the head of its live queue. The
//!    enqueue **completed** once a majority added it; on fewer the waiter leaves every queue and
//!    starts over with a new ticket.
//! 3. **Attempts** (1 round each, at each release notification or at the retry pause, at most a
//!    quarter TTL apart): each refreshes the waiter's expiry — never re-adds an entry a node dropped —
//!    and the node grants on the same rule, counting only the entry with the waiter's current
//!    ticket. A waiter granted on a majority holds the lock, with the
//!    validity rules of any lock; one granted on fewer releases those keys (keeping its place). A
//!    waiter missing from so many queues that no majority can have it leaves and starts over.
//! 4. **Release** deletes the lock key and the holder's entry; **giving up** (error, timeout, the
//!    acquire future dropped) removes the entry and any key of its own.
//! 5. **Wake-ups**: every script that leaves the key free with a non-empty live queue — a release, a
//!    give-up, a round's unlock, an enqueue or attempt that cannot take the free key (the holder's key
//!    or the old head's entry expired with nobody told) — publishes on the key's channel the **wake
//!    name** of the queue's head ([`wake_name`]: 16 hex digits of the SHA1 of its value; the value
//!    itself is a secret and channels are readable by any subscriber). A waiter is woken only by its
//!    own name (or by an empty message), from whichever node names it: heads differ per node.
//!
//! # Why arrival order holds
//! Let A's enqueue complete on a majority M_A before B's enqueue (its ticket round) begins, and A
//! keep waiting. B's
//! ticket round heard a majority, which meets M_A in a node where A's entry already was: so
//! `t_B >= t_A + 1`. B wins only when a majority grants it in one round, and that majority meets M_A
//! in some node x. A's entry reached x before A's enqueue completed, hence before any of B's
//! commands; it leaves x only by A's own release (A got the lock first), A giving up, or its expiry
//! (A stopped refreshing x for a whole TTL: dead or paused past its TTL, which is giving up). While
//! it is there, x's head is not B (`(t_A, A) < (t_B, B)`), so x refuses B. Hence B is not granted
//! before A. No clock of one node is compared with another's; ticket order needs no clocks at all.
//!
//! Wake-ups change no node's state, so they take no part in this argument.
//!
//! # Why the queue drains
//! The lowest live waiter L is the head of every queue that holds it. If it holds a majority, the
//! keys there are free once the holder releases or expires (a refused waiter's keys are released at
//! once), so L's next attempt wins. If it holds fewer, L notices (its enqueue or its attempts say so)
//! and re-enqueues behind; a dead L's entries expire within one TTL. Either way the head moves on.
//! L's next attempt comes at its wake-up — the node that freed the key names L, its head — or, when
//! that message is lost (or the key expired silently), at its keepalive pause, at most a quarter TTL
//! later: so the argument needs no message, and head-only wake-ups cost a lost one at most that
//! pause. Waiters behind L are not woken and need not be: they cannot be granted before L.
//!
//! # Costs and limits
//! Acquire: 2 round trips when the lock is free, then 1 per attempt while waiting: about one when
//! it becomes the head (its wake-up), plus one per keepalive pause (at most a quarter TTL) and one at
//! its subscription's first confirmation. A release costs the head's one round, not one per waiter
//! (`tests/fair_wake.rs`). Release, extend: 1 each; renewal
//! is coalesced like a plain lock's. No local queue or hand-off: every task, local or not, takes its
//! own ticket (a local hand-off would overtake remote waiters). Three traces the model test
//! (`tests/fair_model.rs`) found shaped the scripts: a key of ours left by a lost release must not
//! grant us when we are not the head; an enqueue replaces a stale entry of ours; an attempt counts
//! only an entry with our current ticket. Order is only as strong as the entries' expiry allows: a live waiter whose refreshes to a node of its majority are all lost for
//! a TTL loses its place there, like a dead one.

use std::time::Duration;

use crate::algo::quorum::Vote;
use crate::algo::retry::Wait;
use crate::algo::value::LockValue;
use crate::engine::Redlock;
use crate::error::{LockError, NodeError};
use crate::lock::Lock;
use crate::protocol::cmd::{Args, Cmd, Keys, NodeResult, Reply, Script};
use crate::protocol::scripts::EXTEND;
use crate::protocol::spec::{majority, script_cmd, Forced, Kind, Spec, Suffix};

/// The fair lock (its acquire command is an attempt: see [`ATTEMPT`]).
pub(crate) static FAIR: Spec = Spec {
    name: "fair",
    code: b'q',
    acquire: attempt_cmd,
    vote: grant_vote,
    quorum: majority,
    release: &RELEASE_FAIR,
    release_notify: &RELEASE_FAIR,
    extend: &EXTEND,
    extends_first_key: true,
    give_up: None,
    suffixes: &[
        Suffix {
            name: b":fair:q",
            forced: Forced::Kept,
        },
        Suffix {
            name: b":fair:exp",
            forced: Forced::Kept,
        },
    ],
    marks: &[],
    labeled: None,
    acquire_labeled: None,

    // Every waiter takes its own ticket: local queueing or hand-off would overtake remote waiters.
    queues_locally: false,
    hands_off: false,
    handoff: None,
    multi_resource: false,
    shared: false,
    scripts: &[
        &TICKET,
        &ENQUEUE,
        &ATTEMPT,
        &RELEASE_FAIR,
        &UNLOCK_FAIR,
        &LEAVE,
    ],
};

pub(crate) fn fair_kind() -> Kind {
    Kind::new(&FAIR, 0)
}

/// An attempt of the waiter holding `ticket` (the kind's `arg` slot of `Spec::acquire`).
pub(crate) fn attempt_cmd(keys: &Keys, value: LockValue, ttl_ms: u64, ticket: u64) -> Cmd {
    script_cmd(&ATTEMPT, keys, value, Args::of(&[ttl_ms, ticket]))
}

pub(crate) fn ticket_cmd(keys: &Keys) -> Cmd {
    script_cmd(&TICKET, keys, LockValue::ZERO, Args::NONE)
}

pub(crate) fn enqueue_cmd(keys: &Keys, value: LockValue, ttl_ms: u64, ticket: u64) -> Cmd {
    script_cmd(&ENQUEUE, keys, value, Args::of(&[ttl_ms, ticket]))
}

pub(crate) fn leave_cmd(keys: &Keys, value: LockValue) -> Cmd {
    script_cmd(&LEAVE, keys, value, Args::NONE)
}

pub(crate) fn unlock_cmd(keys: &Keys, value: LockValue) -> Cmd {
    script_cmd(&UNLOCK_FAIR, keys, value, Args::NONE)
}

impl Redlock {
    /// Acquires `resource` as a **fair** lock for `ttl`: a waiter whose enqueue completed before
    /// another's began (its first round, the ticket) is served first, across processes (see the
    /// module doc for the argument). Waits up to
    /// `acquire_timeout`, or without one the time `retry_count` retries would take; release, extend
    /// and renew the lock like any lock.
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// use std::time::Duration;
    /// let lock = redlock.acquire_fair(b"printer", Duration::from_secs(5)).await?;
    /// // ... nobody who queued after us got here before us ...
    /// redlock.release(lock).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// Cost: 2 round trips when free; then 1 per attempt (when it becomes the head, or every retry pause).
    ///
    /// # Errors
    /// [`LockError::Timeout`] when the wait ends first (its place is given up on every node);
    /// [`LockError::QuorumNotReached`] when no majority answers the ticket round before then;
    /// [`LockError::InvalidInput`] as for [`acquire`](Self::acquire).
    pub async fn acquire_fair(
        &self,
        resource: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        let target = self.core().target(fair_kind(), resource.as_ref())?;
        let fair = super::fair_wait::FairWait { core: self.core() };
        fair.acquire_fair(target, ttl, Wait::Configured).await
    }
}

/// Reads an enqueue or attempt reply: `G` granted (the key is ours), `Q` queued but not granted,
/// `L` not in the queue (dropped: expired, or never landed).
pub(crate) fn grant_vote(result: NodeResult) -> Vote {
    match result {
        Ok(Reply::Data(d)) => match &d[..] {
            b"G" => Vote::Yes,
            b"Q" => Vote::Taken,
            b"L" => Vote::Gone,
            _ => Vote::Failed(NodeError::Protocol(
                "fair lock script: bulk string is none of G, Q, L".into(),
            )),
        },
        Ok(other) => Vote::Failed(other.unexpected("fair lock script")),
        Err(e) => Vote::Failed(e),
    }
}

/// Reads a ticket reply: the node's highest live ticket (0 for an empty queue).
pub(crate) fn ticket_vote(result: NodeResult) -> Vote {
    match result {
        Ok(Reply::Int(t)) if t >= 0 => Vote::YesAt(t as u64),
        Ok(other) => Vote::Failed(other.unexpected("fair ticket script")),
        Err(e) => Vote::Failed(e),
    }
}

// Fair locks. KEYS: [1] lock key, [2] queue (waiter -> ticket), [3] expiries (waiter -> node ms).
// ARGV: [1] the waiter's value, [2] TTL ms, [3] its ticket. Every script first drops the waiters whose
// expiry has passed on this node's clock (the only clock an expiry is compared with). Tickets stay
// far below 2^53, so a score holds them exactly.
macro_rules! concat_prune {
    ($($body:expr),+) => {
        concat!(
            "local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000) \
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do redis.call('ZREM', KEYS[2], m) end \
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) ",
            $($body),+
        )
    };
}

/// Ticket: the highest live ticket in the queue, 0 if empty.
pub(crate) static TICKET: Script = Script {
    source: concat_prune!(
        "local top = redis.call('ZREVRANGE', KEYS[2], 0, 0, 'WITHSCORES') \
if top[2] then return tonumber(top[2]) end return 0"
    ),
    sha1: "e7518ca63dee0cd7d6f3d9124373052b4dcdb122",
    resend: true,
};

/// Wakes the live queue's head: publishes its wake name (see [`wake_name`]) on the key's channel.
/// Every script that leaves the key free with a non-empty queue wakes the head, so the one waiter
/// that can be granted next tries at once while the others sleep out their keepalive pause. The
/// name, not the waiter's value: channels are readable by any subscriber, the value is a secret.
macro_rules! wake_head {
    () => {
        "local h = redis.call('ZRANGE', KEYS[2], 0, 0)[1] \
if h then redis.call('PUBLISH', KEYS[1], string.sub(redis.sha1hex(h), 1, 16)) end "
    };
}

/// The name a waiter is woken by: the first 16 hex digits of its value's SHA1, as [`wake_head!`]
/// computes it on the node. 64 bits: names of concurrent waiters of one key do not collide (and a
/// collision only wakes a second waiter early), and the digest reveals nothing of the value.
pub(crate) fn wake_name(value: LockValue) -> bytes::Bytes {
    let hex = sha1_smol::Sha1::from(value.as_bytes()).digest().to_string();
    bytes::Bytes::copy_from_slice(&hex.as_bytes()[..16])
}

/// Enqueue and first try: put `(ARGV[3], waiter)` in the queue — replacing any stale entry of ours,
/// whose older ticket (a lost leave of an earlier place) would otherwise rank us too early — set its
/// expiry, then the grant rule: the key is free (or already ours) and we are the head of the live
/// queue. A key of ours while we are not the head (an earlier round's release that did not land) is
/// deleted: it must neither grant us out of turn nor keep the head waiting. `tests/fair_model.rs`
/// found both traces. A free key we cannot take wakes the head (its wake was lost, or the holder's
/// key or the old head's entry expired without a release).
pub(crate) static ENQUEUE: Script = Script {
    source: concat_prune!(
        "local ttl = tonumber(ARGV[2]) \
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1]) \
redis.call('ZADD', KEYS[3], now + ttl, ARGV[1]) \
for i = 2, 3 do if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end end \
local cur = redis.call('GET', KEYS[1]) \
if cur == false or cur == ARGV[1] then \
if redis.call('ZRANGE', KEYS[2], 0, 0)[1] == ARGV[1] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl) return 'G' end \
if cur then redis.call('DEL', KEYS[1]) end ",
        wake_head!(),
        "end return 'Q'"
    ),
    sha1: "51284b5346e1f55eac784b0c407f2796a9ec7ee1",
    resend: false,
};

/// Attempt: refresh the waiter's expiry if it is still queued **with its current ticket** (`ARGV[3]`),
/// then the grant rule of [`ENQUEUE`]. `L` if it is not there (never re-added), and also if the entry
/// carries another ticket: that is an earlier place of ours whose leave and our new enqueue were both
/// lost on this node, and its older, lower ticket would rank us ahead of waiters that queued before
/// our current place (the model test found that trace). It is removed (waking the head if the key
/// is free: the stale entry may have been the head).
pub(crate) static ATTEMPT: Script = Script {
    source: concat_prune!(
        "local ttl = tonumber(ARGV[2]) local s = redis.call('ZSCORE', KEYS[2], ARGV[1]) \
if s == false then return 'L' end \
if tonumber(s) ~= tonumber(ARGV[3]) then redis.call('ZREM', KEYS[2], ARGV[1]) redis.call('ZREM', KEYS[3], ARGV[1]) \
if redis.call('GET', KEYS[1]) == false then ",
        wake_head!(),
        "end return 'L' end \
redis.call('ZADD', KEYS[3], 'XX', now + ttl, ARGV[1]) \
for i = 2, 3 do if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end end \
local cur = redis.call('GET', KEYS[1]) \
if cur == false or cur == ARGV[1] then \
if redis.call('ZRANGE', KEYS[2], 0, 0)[1] == ARGV[1] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl) return 'G' end \
if cur then redis.call('DEL', KEYS[1]) end ",
        wake_head!(),
        "end return 'Q'"
    ),
    sha1: "96c2e63ef7d48f2046c0601f122cbcf635e30541",
    resend: false,
};

/// Release: compare-and-delete the key, drop the holder's entry (and the expired ones), and wake the
/// new live head, if any. Replies as the plain release: 1 deleted, 0 no key, -1 another's key.
pub(crate) static RELEASE_FAIR: Script = Script {
    source: concat_prune!(
        "local v = redis.call('GET', KEYS[1]) \
redis.call('ZREM', KEYS[2], ARGV[1]) redis.call('ZREM', KEYS[3], ARGV[1]) \
if v and v ~= ARGV[1] then return -1 end \
if v then redis.call('DEL', KEYS[1]) end ",
        wake_head!(),
        "if v then return 1 end return 0"
    ),
    sha1: "064569100411fabb431c1365db4de0e6fff14992",
    resend: true,
};

/// A round's keys of ours released, the place kept (a grant on fewer than a majority): the plain
/// compare-and-delete (after dropping the expired entries), then wake the head if it is another waiter (where we are the head, nobody
/// else can be granted). Replies as the plain release.
pub(crate) static UNLOCK_FAIR: Script = Script {
    source: concat_prune!(
        "local v = redis.call('GET', KEYS[1]) \
if v == false then return 0 elseif v ~= ARGV[1] then return -1 end \
redis.call('DEL', KEYS[1]) \
local h = redis.call('ZRANGE', KEYS[2], 0, 0)[1] \
if h and h ~= ARGV[1] then redis.call('PUBLISH', KEYS[1], string.sub(redis.sha1hex(h), 1, 16)) end return 1"
    ),
    sha1: "4c153781fb08ea6ce973472b504b6488594d3844",
    resend: true,
};

/// Give up: drop the waiter's entry (and the expired ones) and any key of its own; wake the live
/// head if the key is free (we may have been the head, or held the key).
pub(crate) static LEAVE: Script = Script {
    source: concat_prune!(
        "redis.call('ZREM', KEYS[2], ARGV[1]) redis.call('ZREM', KEYS[3], ARGV[1]) \
local cur = redis.call('GET', KEYS[1]) \
if cur == ARGV[1] then redis.call('DEL', KEYS[1]) cur = false end \
if cur == false then ",
        wake_head!(),
        "end return 1"
    ),
    sha1: "8d227b2c66066e98ce1195d7bf36c6dbffd7ca4e",
    resend: true,
};
