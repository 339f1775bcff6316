//! The scripts the single-key kinds share (exclusive, fenced, write, fair): owner-checked release
//! and extend, the release that wakes waiters elsewhere, the waiter mark, and their coalesced forms
//! (one call over several locks: the watchdog's extend, the pipelined transport's releases).
//!
//! # The scripts of every kind
//! Keys and values always travel as `KEYS`/`ARGV`, never spliced into the source, so a resource name is
//! data and can be any bytes. Release/extend scripts answer `1` (done: we owned it), `0` (gone: expired)
//! or `-1` (someone else's value is there), so callers can tell "not owner" from "already expired";
//! acquire scripts answer `1` (acquired) or `-1` (taken). The digests are checked against a real
//! `SCRIPT LOAD` in the tests, and by every connection's handshake, which loads them all.

use super::cmd::{Coalesced, Op, Script};
use super::grant::grant_entry;
use super::spec::{Forced, Suffix};
use crate::algo::quorum::Vote;
use crate::error::NodeError;

/// The waiter mark a client that lost a round sets (`prefix{resource}:wait`, see [`MARK_WAITING`]).
pub(crate) const WAIT_MARK: Suffix = Suffix {
    name: b":wait",
    forced: Forced::Wakes,
};

/// Reads one lock's character of a coalesced extend answer (see [`EXTEND_MANY`]): `1` extended, `0`
/// gone, `-` someone else's.
pub(crate) fn extend_many_vote(code: u8) -> Vote {
    match code {
        b'1' => Vote::Yes,
        b'0' => Vote::Gone,
        b'-' => Vote::Taken,
        _ => Vote::Failed(NodeError::Protocol(
            "coalesced extend script: an answer is none of 1, 0, -".into(),
        )),
    }
}

/// Lua: `now`, the node's clock in ms (`TIME`), for the scripts that compare expiries kept on the
/// node's own clock (entries of sets: readers, permits, fair-queue entries).
macro_rules! node_now {
    () => {
        "local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000) "
    };
}
pub(crate) use node_now;

/// The plain lock's hand-off to the first waiter elsewhere, on the key `$k` (a Lua expression) just
/// freed of our value `v`: its waiter list's first entry taken out and granted the key
/// (`crate::protocol::grant`), or, not granted, its name published on that waiter's own channel; for a
/// waiter mark (a string) or a list the user may not pop (ACL), an empty message on the key's
/// channel, which wakes every subscriber. Shared by [`RELEASE_NOTIFY`] and its coalesced forms.
macro_rules! pop_and_wake {
    ($k:literal) => {
        concat!(
            "local w = redis.pcall('ZPOPMIN', ",
            $k,
            " .. ':wait') if w.err == nil and w[1] then ",
            grant_entry!($k, "w[1]", "v"),
            "if not granted then local nm = gn or w[1] redis.call('PUBLISH', ",
            $k,
            " .. ':h:' .. nm, nm) end else redis.call('PUBLISH', ",
            $k,
            ", '') end "
        )
    };
}

/// A coalesced release over several locks, answering one character per lock: `$head` opens the
/// loop (where lock `i`'s key `k` and value come from, and the character for a key this call cannot
/// read), `$deleted` runs where the key held our value and was deleted (it sets `r[i]`).
macro_rules! release_many {
    ($head:expr, $deleted:expr) => {
        concat!(
            $head,
            $deleted,
            "elseif v == false then r[i] = '0' else r[i] = '-' end end return table.concat(r)"
        )
    };
}

/// [`release_many!`]'s head over declared keys (`KEYS[i]`, value `ARGV[i]`); `e`: another type.
macro_rules! declared_keys {
    () => {
        "local r = {} for i, k in ipairs(KEYS) do local v = redis.pcall('GET', k) \
if type(v) == 'table' then r[i] = 'e' elseif v == ARGV[i] then redis.call('DEL', k) "
    };
}

/// [`release_many!`]'s head over keys of any slots in `ARGV` (see [`RELEASE_MANY_ANY_SLOT`]); `m`:
/// not served here.
macro_rules! any_slot_keys {
    () => {
        "local n = #ARGV / 2 local r = {} for i = 1, n do local k = ARGV[i] local v = redis.pcall('GET', k) \
if type(v) == 'table' then r[i] = 'm' elseif v == ARGV[n + i] then redis.call('DEL', k) "
    };
}

/// [`release_many!`]'s body for [`RELEASE`]: deleted.
macro_rules! deleted {
    () => {
        "r[i] = '1' "
    };
}

/// [`release_many!`]'s body for [`RELEASE_NOTIFY`]: deleted, and `2` when a waiter was woken.
macro_rules! deleted_and_woken {
    () => {
        concat!(
            "r[i] = '1' if redis.pcall('EXISTS', k .. ':wait') == 1 then r[i] = '2' ",
            pop_and_wake!("k"),
            "end "
        )
    };
}

/// Compare-and-delete: `DEL` only if the key still holds our value. Also releases a write lock
/// (`KEYS[1]` is the writer key; the others are ignored).
pub(crate) static RELEASE: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v == ARGV[1] then return redis.call('DEL', KEYS[1]) \
elseif v == false then return 0 else return -1 end",
    sha1: "73afff61f75cb8d8c5c4e250cc4561d4b66c2e4f",
    resend: true,
    op: Op::Release,
};

/// [`RELEASE`], then — only when a waiter elsewhere has marked itself — hands it the key or wakes
/// it at once, answering 2 instead of 1: the plain lock's waiter list (a sorted set of entries,
/// `crate::protocol::handoff`) by taking out its first entry, which is granted the key if its
/// waiter listens (`crate::protocol::grant`), else woken alone on its own channel
/// (`handoff::wake_channel`; no reservation: the key is free to anyone, and a waiter that loses
/// takes its place back); a waiter mark ([`MARK_WAITING`], a string), or a list the user may not
/// pop (ACL), by a `PUBLISH` of nothing on the key's name, which wakes every subscriber.
/// Uncontended releases pay one `EXISTS`, not a `PUBLISH`: the nodes are the bottleneck of a busy
/// lock service.
pub(crate) static RELEASE_NOTIFY: Script = Script {
    source: concat!(
        "local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then redis.call('DEL', KEYS[1]) \
if redis.pcall('EXISTS', KEYS[1] .. ':wait') == 1 then ",
        pop_and_wake!("KEYS[1]"),
        "return 2 end return 1 elseif v == false then return 0 else return -1 end"
    ),
    sha1: "5d0d65fcbc3025358dd8b8b3a9f82a28ebacd682",
    resend: true,
    op: Op::ReleaseNotify,
};

/// Whether the lock is still ours here, changing nothing (`Redlock`'s `is_held`): 1 while the first key
/// holds our value, 0 when it is gone, -1 when another owner's value is there.
pub(crate) static HOLDS: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then return 1 elseif v == false then return 0 else return -1 end",
    sha1: "5f6754ab5e8820acfb72170c0e4c076d0693d3ff",
    resend: true,
    op: Op::Own,
};
/// [`HOLDS`] for a lock on several keys (a multi-resource lock): ours only while every key holds
/// our value.
pub(crate) static HOLDS_ALL: Script = Script {
    source: "for i = 1, #KEYS do local v = redis.call('GET', KEYS[i]) if v ~= ARGV[1] then if v == false then return 0 end return -1 end end return 1",
    sha1: "8a80370f8c902d614a576319989648d62fc641f7",
    resend: true,
    op: Op::Own,
};
/// [`HOLDS`] for a holder that is an entry of a set (a reader, a permit: `KEYS[2]`): 1 while our
/// entry is there and its expiry (the node's ms) has not passed, else 0.
pub(crate) static HOLDS_MEMBER: Script = Script {
    source: concat!(
        node_now!(),
        "local s = redis.call('ZSCORE', KEYS[2], ARGV[1]) if s and tonumber(s) > now then return 1 end return 0"
    ),
    sha1: "5a7f0f95c295953673019027ee4a80ef28f2ef9c",
    resend: true,
    op: Op::Own,
};

/// Who holds a busy lock and for how long, on this node (`crate::engine::busy`): over the lock's
/// keys, the longest `PTTL` (the holder's key, a reader set, a semaphore's permits; a key without
/// expiry is a fence counter and skipped, except the lock key itself: -1, never), -2 when none
/// exists; then `:` and the holder label when the label key's digest matches the value holding the
/// lock now (as inspect shows it; the label key outlives the lock and takes no part in the time).
/// Read-only.
pub(crate) static BUSY: Script = Script {
    source: "local h = KEYS[1] .. ':holder' local t = -2 for i = 1, #KEYS do if KEYS[i] ~= h then local p = redis.call('PTTL', KEYS[i]) if p == -1 and i == 1 then t = -1 break end if p >= 0 and p > t then t = p end end end local l = '' local v = redis.pcall('GET', KEYS[1]) local s = redis.pcall('GET', h) if type(v) == 'string' and type(s) == 'string' and string.sub(s, 1, 40) == redis.sha1hex(v) then l = string.sub(s, 41) end return t .. ':' .. l",
    sha1: "2eca2632c6bb6e5ecfaac509c06e079b7f4635a3",
    resend: true,
    op: Op::Own,
};

/// A client that lost a round marks that it waits (`KEYS[1]..':wait'`, for `ARGV[2]` ms), so the
/// holder's release answers 2 and its process yields to the waiter at the end of a hand-off streak.
/// (The marker key is derived, not declared: in its lock key's hash slot, so fine on a cluster too.
/// It and the releases' `EXISTS` of it use `pcall`: while a slot migrates, the mark can already be on
/// the target, and the source then refuses the access with an error that would otherwise abort the
/// script after its `DEL`: a release must not fail over a hint.)
pub(crate) static MARK_WAITING: Script = Script {
    source: "redis.pcall('SET', KEYS[1] .. ':wait', '1', 'PX', ARGV[2]) return 1",
    sha1: "58910e352f9b6c53f2e2c5ba4af19c0e18277434",
    resend: true,
    op: Op::Mark,
};

/// Compare-and-`PEXPIRE`: reset the TTL (ms in `ARGV[2]`) only if the key still holds our value.
pub(crate) static EXTEND: Script = Script {
    source: "local v = redis.call('GET', KEYS[1]) \
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 \
elseif v == false then return 0 else return -1 end",
    sha1: "4bbcd4c07b7515b9ce88be6710a50d3381df9c19",
    resend: true,
    op: Op::Extend,
};

/// Coalesced extend: [`EXTEND`] for several exclusive locks in one call (`KEYS[i]` with value
/// `ARGV[2i-1]` and TTL `ARGV[2i]` ms). Answers one character per lock, in order: `1` extended, `0`
/// gone, `-` someone else's (or a key of another type: `pcall`, so one odd key cannot fail the
/// others' answers). One call per node per watchdog tick instead of one per lock: the nodes parse,
/// dispatch and reply once.
pub(crate) static EXTEND_MANY: Script = Script {
    source: "local r = {} \
for i, k in ipairs(KEYS) do local v = redis.pcall('GET', k) \
if v == ARGV[2 * i - 1] then redis.call('PEXPIRE', k, ARGV[2 * i]) r[i] = '1' \
elseif v == false then r[i] = '0' else r[i] = '-' end end \
return table.concat(r)",
    sha1: "81a233c89febc3d1371cd894da87af9fc0586cdc",
    resend: true,
    op: Op::ExtendMany,
};

/// Coalesced release: [`RELEASE`] for several locks in one call (`KEYS[i]` with value `ARGV[i]`),
/// answering one character per lock, in order: `1` deleted, `0` gone, `-` someone else's, `e` the
/// key holds another type (`pcall`: one odd key must not fail the others' answers, nor stop the
/// script after some deletes). The pipelined transport sends it for releases queued back to back on
/// one connection (see [`COALESCED`]); measured on present keys it costs the node about a third of
/// the single calls (`results/2026-12-01/release-batch/`).
pub(crate) static RELEASE_MANY: Script = Script {
    source: release_many!(declared_keys!(), deleted!()),
    sha1: "b8673592946f5f669155e2abae9d54824b89e3b2",
    resend: true,
    op: Op::ReleaseMany,
};

/// [`RELEASE_NOTIFY`] for several locks in one call, answering like [`RELEASE_MANY`] plus `2`:
/// deleted and a waiter was told.
pub(crate) static RELEASE_NOTIFY_MANY: Script = Script {
    source: release_many!(declared_keys!(), deleted_and_woken!()),
    sha1: "29e160eb4322e02385a49175cf184020aa491ad7",
    resend: true,
    op: Op::ReleaseNotifyMany,
};

/// [`RELEASE_MANY`] for a cluster shard, over keys of **any hash slots** the shard serves: the keys
/// travel in `ARGV` (`ARGV[1..n]` keys, `ARGV[n+1..2n]` values), undeclared, so the server's
/// `CROSSSLOT` check of declared keys does not apply, and each `GET`/`DEL` is checked on its own
/// (a script without a `#!` line may touch undeclared keys of several slots on one node: Redis 6
/// and 7, Valkey). A key this node does not serve now (its slot migrating away, moved, the cluster
/// down) fails that key's `pcall`ed `GET` before anything was done to it: it answers `m`, and the
/// transport sends that one lock's single release, whose declared key follows `MOVED`/`ASK`
/// (`crate::transport::pipeline::coalesce`). Otherwise it answers like [`RELEASE_MANY`].
pub(crate) static RELEASE_MANY_ANY_SLOT: Script = Script {
    source: release_many!(any_slot_keys!(), deleted!()),
    sha1: "56e94838a7f47fe37ab1ab154ae721e865ff69cc",
    resend: true,
    op: Op::ReleaseManyAnySlot,
};

/// [`RELEASE_NOTIFY_MANY`] over keys of any slots, as [`RELEASE_MANY_ANY_SLOT`]. A lock's `:wait`
/// key shares its slot (`prefix{resource}:wait`), so it is served where its lock key is.
pub(crate) static RELEASE_NOTIFY_MANY_ANY_SLOT: Script = Script {
    source: release_many!(any_slot_keys!(), deleted_and_woken!()),
    sha1: "8442294a2fb1171e86b5851cc56048497887bc09",
    resend: true,
    op: Op::ReleaseNotifyManyAnySlot,
};

/// The releases the pipelined transport may coalesce, with their many-lock forms. Only these two:
/// their answer for one lock depends on nothing but that lock's key, so one call over several keys
/// answers exactly what the single calls would, in the same order on the node.
pub(crate) static COALESCED: [Coalesced; 2] = [
    Coalesced {
        one: &RELEASE,
        many: &RELEASE_MANY,
        any_slot: &RELEASE_MANY_ANY_SLOT,
    },
    Coalesced {
        one: &RELEASE_NOTIFY,
        many: &RELEASE_NOTIFY_MANY,
        any_slot: &RELEASE_NOTIFY_MANY_ANY_SLOT,
    },
];

#[cfg(test)]
mod tests {
    use super::COALESCED;

    /// The coalesced releases are built from one template: each digest must still be its source's
    /// (the handshake loads them by it).
    #[test]
    fn every_coalesced_script_digest_matches_its_source() {
        for c in &COALESCED {
            for script in [c.one, c.many, c.any_slot] {
                let digest = sha1_smol::Sha1::from(script.source).digest().to_string();
                assert_eq!(script.sha1, digest, "{}", script.source);
            }
        }
    }
}
