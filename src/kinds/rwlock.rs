//! Read-write locks: many readers or one writer, with the quorum, validity, release-on-failure and
//! renewal rules of any lock.
//!
//! # Policy: writers first
//! A writer that finds readers records its **intent** on the node (its ticket, for one TTL). While an
//! intent is there, new readers are refused, so the current readers drain and the writer gets in: a
//! steady stream of readers cannot starve a writer. The intent survives the writer's retries (same
//! ticket) and is withdrawn when it gives up; if the writer dies, it expires after one TTL. The price:
//! under a steady stream of writers, readers wait (writer preference, as in most RW locks).
//!
//! # Keys per node
//! `prefix{resource}` (the writer's value), `prefix{resource}:rw:readers` (a sorted set: each reader's
//! value scored by its expiry on the node's clock) and `prefix{resource}:rw:intent`. A resource used
//! as a read-write lock should not also be used as a plain lock.
//!
//! Cost: one round trip per attempt for either side, like a plain lock; release and extend one each.

use std::time::Duration;

use crate::algo::retry::Wait;
use crate::algo::value::LockValue;
use crate::engine::Redlock;
use crate::error::LockError;
use crate::kinds::base::{BASE, WAITERS};
use crate::lock::Lock;
use crate::protocol::cmd::{script_cmd, Args, Cmd, Keys, Op, Script};
use crate::protocol::inspect::{count, int, ttl, InspectPart, KeyState};
use crate::protocol::scripts::{node_now, HOLDS_MEMBER};
use crate::protocol::spec::{Forced, Kind, LockKind, Spec, Suffix};

const SUFFIXES: &[Suffix] = &[
    Suffix {
        name: b":rw:readers",
        forced: Forced::Counted,
    },
    Suffix {
        name: b":rw:intent",
        forced: Forced::Counted,
    },
];

/// A shared (reader) hold, granted while fewer than `max_readers` (the kind's `arg`) hold it.
pub(crate) static READ: Spec = Spec {
    name: "read",
    code: b'r',
    acquire: acquire_read_cmd,
    release: &RELEASE_READ,
    release_notify: &RELEASE_READ,
    extend: &EXTEND_READ,
    holds: &HOLDS_MEMBER,
    extends_first_key: false,
    suffixes: SUFFIXES,
    marks: &[],
    // Readers share: there is no one to wait behind locally.
    queues_locally: false,
    hands_off: false,
    shared: true,
    scripts: &[&ACQUIRE_READ, &RELEASE_READ, &EXTEND_READ],
    inspect: &[&READERS],
    ..BASE
};

/// The exclusive (writer) hold; its `arg` is a ticket identifying this acquire across its attempts, so
/// its intent to write survives retries.
pub(crate) static WRITE: Spec = Spec {
    name: "write",
    code: b'w',
    acquire: acquire_write_cmd,
    give_up: Some(cancel_intent_cmd),
    suffixes: SUFFIXES,
    scripts: &[&ACQUIRE_WRITE, &CANCEL_INTENT],
    inspect: &[&WAITERS, &INTENT],
    ..BASE
};

/// Inspect's part for readers: live ones, ours among the first 256 (a value's first 8 bytes are its
/// engine's tag), and ms until the last one expires (-2: none). Readers hold the resource without its
/// key: with no key, they are its holders (`KeyState::kind` `read`, their time left).
static READERS: InspectPart = InspectPart {
    lua: "local n, mine, left = 0, 0, -2 local r = K[':rw:readers'] \
if ty(r) == 'zset' then n = redis.call('ZCOUNT', r, '(' .. now, '+inf') \
if n > 0 then left = math.floor(tonumber(redis.call('ZRANGE', r, -1, -1, 'WITHSCORES')[2]) - now) \
for _, m in ipairs(redis.call('ZRANGEBYSCORE', r, '(' .. now, '+inf', 'LIMIT', 0, 256)) do \
if string.sub(m, 1, 8) == ARGV[1] then mine = mine + 1 end end end end \
out[#out + 1] = n out[#out + 1] = mine out[#out + 1] = left",
    fields: 3,
    read: read_readers,
};

fn read_readers(fields: &[&[u8]], state: &mut KeyState) -> Option<()> {
    state.readers = count(fields[0])?;
    state.our_readers = count(fields[1])?;
    state.ours |= state.our_readers > 0;
    let left = int(fields[2])?;
    if state.kind.is_none() && state.readers > 0 {
        state.kind = Some(LockKind::of(&READ));
        state.remaining = u64::try_from(left).ok().map(Duration::from_millis);
    }
    Some(())
}

/// Inspect's part for a waiting writer: its intent's time to live, `KeyState::write_intent`.
static INTENT: InspectPart = InspectPart {
    lua: "out[#out + 1] = pttl(K[':rw:intent'])",
    fields: 1,
    read: |f, s| {
        s.write_intent = ttl(f[0])?;
        Some(())
    },
};

fn acquire_read_cmd(keys: &Keys, value: LockValue, ttl_ms: u64, max_readers: u64) -> Cmd {
    script_cmd(&ACQUIRE_READ, keys, value, Args::of(&[ttl_ms, max_readers]))
}

fn acquire_write_cmd(keys: &Keys, value: LockValue, ttl_ms: u64, ticket: u64) -> Cmd {
    script_cmd(&ACQUIRE_WRITE, keys, value, Args::of(&[ttl_ms, ticket]))
}

/// What a writer sends when it gives up, so its intent stops holding readers back.
fn cancel_intent_cmd(keys: &Keys, ticket: u64) -> Cmd {
    script_cmd(&CANCEL_INTENT, keys, LockValue::ZERO, Args::of(&[ticket]))
}

impl Redlock {
    /// Acquires a shared (reader) hold on `resource`, retrying like [`acquire`](Self::acquire).
    /// Granted while no writer holds or waits for the resource and fewer than `max_readers`
    /// (see [`crate::Config::max_readers`]) readers hold it. Release and extend it like any lock.
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// use std::time::Duration;
    /// let read = redlock.acquire_read(b"catalog", Duration::from_secs(5)).await?;
    /// // ... many readers may be here at once ...
    /// redlock.release(read).await?;
    /// let write = redlock.acquire_write(b"catalog", Duration::from_secs(5)).await?;
    /// // ... alone ...
    /// redlock.release(write).await?;
    /// # Ok(()) }
    /// ```
    #[deprecated(
        since = "0.2.0",
        note = "use `redlock.lock(resource).read().ttl(ttl)`: a `LockGuard`, released on drop"
    )]
    pub async fn acquire_read(
        &self,
        resource: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        let target = self.core().target(self.read_kind(), resource.as_ref())?;
        self.core().acquire(target, ttl, Wait::Configured).await
    }

    /// Acquires the exclusive (writer) hold on `resource`, retrying like [`acquire`](Self::acquire).
    /// Granted when no writer and no live reader holds it; while readers remain, new readers are held
    /// back (see the module's policy).
    #[deprecated(
        since = "0.2.0",
        note = "use `redlock.lock(resource).write().ttl(ttl)`: a `LockGuard`, released on drop"
    )]
    pub async fn acquire_write(
        &self,
        resource: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        let target = self.core().target(write_kind(), resource.as_ref())?;
        self.core().acquire(target, ttl, Wait::Configured).await
    }

    /// The kind of a reader of this engine (its `max_readers` is the kind's number).
    pub(crate) fn read_kind(&self) -> Kind {
        Kind::new(&READ, u64::from(self.core().settings().max_readers))
    }
}

pub(crate) fn write_kind() -> Kind {
    // Any value unique among concurrent writers of one resource will do: it only names an intent.
    Kind::new(&WRITE, fastrand::u64(1..))
}

// Read-write locks. KEYS: [1] writer key (string), [2] readers (sorted set: reader value -> expiry in
// the node's ms clock), [3] writer intent (the ticket of a writer waiting for readers to leave).
// ARGV: [1] lock value, [2] TTL ms, [3] writer ticket. Readers expire per entry, by the same node clock
// that expires PX keys; the set itself expires with its longest reader.
// Why the node's `TIME` truncated to ms is safe: an entry scored `floor(now) + ttl` counts as a live
// reader while `floor(later) < score` (live readers are those scored above `now`; EXTEND_READ's `<=`
// and the expired-reader drop's `ZCOUNT -inf now` are inclusive), so it lives at least `ttl - 1 ms`
// after the script ran, which is after the client's round started; the client's validity is at most
// `ttl - drift` with `drift >= 2 ms` (`timing.rs`), so no reader trusts an entry the node has
// dropped or no longer counts. PX keys have the same 1 ms granularity. A node whose wall clock jumps
// forward drops both early.

/// Drops expired readers, at most 1,000 per script (the lowest scores are the expired ones): a
/// node must not stall on a crowd of readers that died without releasing (100k took one
/// `ZREMRANGEBYSCORE` 20-40 ms on a 2-core VM). Expired readers may then remain, so the scripts
/// count only live ones: `live_readers!()`, those scored above `now`.
macro_rules! drop_expired {
    () => {
        "local d = redis.call('ZCOUNT', KEYS[2], '-inf', now) \
if d > 0 then redis.call('ZPOPMIN', KEYS[2], math.min(d, 1000)) end "
    };
}

/// The live readers' count (see [`drop_expired!`]).
macro_rules! live_readers {
    () => {
        "redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')"
    };
}

/// Read acquire: refused while a writer holds the lock **or waits for it** (writer preference), or
/// when `ARGV[3]` readers already hold it.
pub(crate) static ACQUIRE_READ: Script = Script {
    source: concat!(
        node_now!(),
        drop_expired!(),
        "if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then return -1 end \
if ",
        live_readers!(),
        " >= tonumber(ARGV[3]) then return -1 end \
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1]) \
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end \
return 1"
    ),
    sha1: "8157f719978c8bd4f0895df63df22dab97684e84",
    resend: false,
    op: Op::Own,
};

/// Write acquire: granted when no writer and no live reader; while readers remain, it records the
/// writer's intent (its ticket) so no new reader gets in, and only the intent's owner may take it next.
pub(crate) static ACQUIRE_WRITE: Script = Script {
    source: concat!(
        node_now!(),
        drop_expired!(),
        "if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end \
local intent = redis.call('GET', KEYS[3]) \
if intent ~= false and intent ~= ARGV[3] then return -1 end \
if ",
        live_readers!(),
        " > 0 then redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2]) return -1 end \
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) \
if intent ~= false then redis.call('DEL', KEYS[3]) end \
return 1"
    ),
    sha1: "6aa966b27eaa62d4f190a9473668def7764fd73a",
    resend: false,
    op: Op::Own,
};

/// A writer that gives up withdraws its intent (`ARGV[2]` is its ticket here).
pub(crate) static CANCEL_INTENT: Script = Script {
    source: "if redis.call('GET', KEYS[3]) == ARGV[2] then redis.call('DEL', KEYS[3]) return 1 end return 0",
    sha1: "e6c99d130eac819ba11b90954860b957912de057",
    resend: true,
    op: Op::Own,
};

/// Read release: remove our reader entry.
pub(crate) static RELEASE_READ: Script = Script {
    source: "if redis.call('ZREM', KEYS[2], ARGV[1]) == 1 then return 1 end return 0",
    sha1: "ec0e4c19dace08457385644ab730daa2be929b9f",
    resend: true,
    op: Op::Own,
};

/// Read extend: move our entry's expiry, only while it is still live.
pub(crate) static EXTEND_READ: Script = Script {
    source: concat!(
        node_now!(),
        "local s = redis.call('ZSCORE', KEYS[2], ARGV[1]) \
if s == false or tonumber(s) <= now then return 0 end \
redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[2]), ARGV[1]) \
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end \
return 1"
    ),
    sha1: "0b53351cbdc5e6054c1cc78b771c22eba7d2af5f",
    resend: true,
    op: Op::Own,
};
