//! The fair lock as the engine and its waiter see it (the protocol and its argument are the
//! folder's doc, `kinds::fair`): its `Spec`, the commands of its rounds, how their replies vote,
//! and the names and channels its waiters are woken by.

use super::scripts::{
    ATTEMPT, ENQUEUE, FORCE_ENDS_HOLDER, LEAVE, RELEASE_FAIR, RELEASE_FAIR_TO, UNLOCK_FAIR,
};
use crate::algo::quorum::Vote;
use crate::algo::value::{LockValue, TAG_LEN};
use crate::error::NodeError;
use crate::kinds::base::BASE;
use crate::protocol::cmd::script_cmd;
use crate::protocol::cmd::{Args, Cmd, Keys, NodeResult, Reply};
use crate::protocol::inspect::{count, InspectPart};
use crate::protocol::spec::{Forced, Kind, Spec, Successor, Suffix};

/// The fair lock (its acquire command is an attempt: see [`ATTEMPT`]).
pub(crate) static FAIR: Spec = Spec {
    name: "fair",
    code: b'q',
    acquire: attempt_cmd,
    vote: grant_vote,
    release: &RELEASE_FAIR,
    release_notify: &RELEASE_FAIR,
    suffixes: &[Suffix {
        name: b":fair:q",
        forced: Forced::Queue(FORCE_ENDS_HOLDER),
    }],
    marks: &[],
    // Every waiter takes its own place: local queueing or hand-off would overtake remote waiters.
    queues_locally: false,
    hands_off: false,
    // A release names our next waiter, and the nodes grant it where it is the head.
    successor: Some(&FAIR_SUCCESSOR),
    scripts: &[
        &ENQUEUE,
        &ATTEMPT,
        &RELEASE_FAIR,
        &RELEASE_FAIR_TO,
        &UNLOCK_FAIR,
        &LEAVE,
    ],
    inspect: &[&QUEUED],
    ..BASE
};

/// Inspect's part: live entries of the queue other than the holder's (the holder's own entry stays
/// until its release), `KeyState::fair_waiters`: an entry is live while its live key exists (see
/// `kinds::fair::scripts`). Only the first 1,000 entries' live keys are read, and every entry
/// after them counts: an operator's read must not stall a node behind a long queue (100k waiters
/// would be 100k reads in one script), and a dead entry is removed once it reaches the head anyway.
/// `PTTL` (-2: no key) and `ZCOUNT`, not `EXISTS` and `ZCARD`: the guide's read-only inspecting user
/// may run only those.
static QUEUED: InspectPart = InspectPart {
    lua: "local n = 0 local q = K[':fair:q'] if ty(q) == 'zset' then \
for _, m in ipairs(redis.call('ZRANGE', q, 0, 999)) do if m ~= v and redis.call('PTTL', \
KEYS[1] .. ':fair:l:' .. string.sub(redis.sha1hex(m), 1, 16)) ~= -2 then n = n + 1 end end \
n = n + math.max(0, redis.call('ZCOUNT', q, '-inf', '+inf') - 1000) end out[#out + 1] = n",
    fields: 1,
    read: |f, s| {
        s.fair_waiters = count(f[0])?;
        Some(())
    },
};

/// The fair lock's release to the next waiter of the releasing engine (see [`RELEASE_FAIR_TO`]).
static FAIR_SUCCESSOR: Successor = Successor {
    release_to: release_to_cmd,
    vote: release_to_vote,
};

fn release_to_cmd(
    keys: &Keys,
    holder: LockValue,
    ttl_ms: u64,
    ticket: u64,
    next: LockValue,
) -> Cmd {
    let name = successor_name(next);
    script_cmd(
        &RELEASE_FAIR_TO,
        keys,
        holder,
        Args::of(&[ttl_ms, ticket, name]),
    )
}

/// The waiter [`RELEASE_FAIR_TO`] may grant, as the script computes it from the queue's head: the
/// first 13 hex digits of its value's SHA1 (52 bits, exact as a Lua number). The reply's full SHA1
/// is what the engine trusts; this only picks the head.
fn successor_name(value: LockValue) -> u64 {
    let hex = sha1_smol::Sha1::from(value.as_bytes()).digest().to_string();
    u64::from_str_radix(&hex[..13], 16).unwrap_or(0)
}

/// Reads a [`RELEASE_FAIR_TO`] reply: the release's vote (`1`, `0`, `-1` as the plain release's),
/// and whether it set the key to `next`'s value (`G` and that value's SHA1 after it).
fn release_to_vote(result: NodeResult, next: LockValue) -> (Vote, bool) {
    let Ok(Reply::Data(d)) = result else {
        // Any other reply reads as the plain release's would (`WRONGTYPE`: another's key).
        return (Vote::of_script(result), false);
    };
    let (release, granted) = match d.iter().position(|b| *b == b'G') {
        Some(at) => (&d[..at], Some(&d[at + 1..])),
        None => (&d[..], None),
    };
    let vote = match release {
        b"1" => Vote::Yes,
        b"0" => Vote::Gone,
        b"-1" => Vote::Taken,
        _ => Vote::Failed(NodeError::Protocol(
            "fair release script: bulk string is none of 1, 0, -1".into(),
        )),
    };
    let ours = sha1_smol::Sha1::from(next.as_bytes()).digest().to_string();
    (vote, granted == Some(ours.as_bytes()))
}

pub(crate) fn fair_kind() -> Kind {
    Kind::new(&FAIR, 0)
}

/// An attempt of the waiter holding `ticket` (the kind's `arg` slot of `Spec::acquire`), in epoch 0
/// (the waiter's own attempts name their epoch: [`attempt_in`]).
pub(crate) fn attempt_cmd(keys: &Keys, value: LockValue, ttl_ms: u64, ticket: u64) -> Cmd {
    attempt_in(keys, value, ttl_ms, ticket, 0)
}

/// An attempt of the waiter holding `ticket`, in its `epoch` (see `kinds::fair`, the grant by
/// message).
pub(crate) fn attempt_in(
    keys: &Keys,
    value: LockValue,
    ttl_ms: u64,
    ticket: u64,
    epoch: u64,
) -> Cmd {
    script_cmd(&ATTEMPT, keys, value, Args::of(&[ttl_ms, ticket, epoch]))
}

/// An enqueue, with the waiter's ticket hint: this host's wall clock in microseconds (see the module
/// doc: the hint makes the nodes agree more often, and is never trusted).
pub(crate) fn enqueue_cmd(keys: &Keys, value: LockValue, ttl_ms: u64, epoch: u64) -> Cmd {
    let hint = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_micros().clamp(1, MAX_HINT) as u64);
    script_cmd(&ENQUEUE, keys, value, Args::of(&[ttl_ms, hint, epoch]))
}

/// Hints above this are clipped, so a ticket stays an exact score (below 2^53) for centuries.
const MAX_HINT: u128 = 1 << 52;

/// A give-up of the place whose epochs go up to `last` ([`LAST_EPOCH`]: every place of the wait).
pub(crate) fn leave_cmd(keys: &Keys, value: LockValue, last: u64) -> Cmd {
    script_cmd(&LEAVE, keys, value, Args::of(&[last]))
}

/// Above every epoch a wait uses (an exact Lua number).
pub(crate) const LAST_EPOCH: u64 = (1 << 53) - 1;

/// A round's unlock, which first moves the waiter's live key to `epoch` (its TTL `ttl_ms`).
pub(crate) fn unlock_cmd(keys: &Keys, value: LockValue, ttl_ms: u64, epoch: u64) -> Cmd {
    script_cmd(&UNLOCK_FAIR, keys, value, Args::of(&[ttl_ms, epoch]))
}

/// The grant a release's message names for the waiter `value` in `epoch`, as the hub writes it
/// down (`g` and 16 hex digits: the SHA1 of the value, `:` and the epoch in decimal, as the scripts
/// compute it). Only the waiter knows its value, and only its current epoch's grant counts.
pub(crate) fn grant_message(value: LockValue, epoch: u64) -> bytes::Bytes {
    let mut input = value.as_bytes().to_vec();
    input.extend_from_slice(format!(":{epoch}").as_bytes());
    let hex = sha1_smol::Sha1::from(&input).digest().to_string();
    let mut message = Vec::with_capacity(17);
    message.push(b'g');
    message.extend_from_slice(&hex.as_bytes()[..16]);
    message.into()
}

/// Reads an attempt reply: `G` granted (the key is ours), `Q` queued but not granted, `L` not in the
/// queue (dropped: expired, or never landed).
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

/// Reads an enqueue reply: `G` or `Q` as an attempt's, then the ticket the node gave (`G17`).
pub(crate) fn enqueue_vote(result: NodeResult) -> Result<(Vote, u64), Vote> {
    let bad = || {
        Vote::Failed(NodeError::Protocol(
            "fair enqueue script: bulk string is not G or Q and a ticket".into(),
        ))
    };
    match result {
        Ok(Reply::Data(d)) if d.len() > 1 => {
            let vote = match d[0] {
                b'G' => Vote::Yes,
                b'Q' => Vote::Taken,
                _ => return Err(bad()),
            };
            let ticket = std::str::from_utf8(&d[1..])
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(bad)?;
            Ok((vote, ticket))
        }
        Ok(Reply::Data(_)) => Err(bad()),
        Ok(other) => Err(Vote::Failed(other.unexpected("fair enqueue script"))),
        Err(e) => Err(Vote::Failed(e)),
    }
}

/// The channel a waiter is woken on: its key, `:w:` and the hex of its engine's tag (the value's
/// first bytes, not secret: see `crate::algo::value`), as the scripts compute it. One per key and
/// engine, so a wake-up reaches only the process of the waiter it names, not every subscriber of
/// the key.
pub(crate) fn wake_channel(key: &[u8], value: LockValue) -> bytes::Bytes {
    let mut channel = Vec::with_capacity(key.len() + 3 + 2 * TAG_LEN);
    channel.extend_from_slice(key);
    channel.extend_from_slice(b":w:");
    for b in &value.as_bytes()[..TAG_LEN] {
        channel.extend_from_slice(format!("{b:02x}").as_bytes());
    }
    channel.into()
}

/// The name a waiter is woken by: the first 16 hex digits of its value's SHA1, as the scripts
/// compute it on the node. 64 bits: names of concurrent waiters of one key do not collide (and a
/// collision only wakes a second waiter early), and the digest reveals nothing of the value.
pub(crate) fn wake_name(value: LockValue) -> bytes::Bytes {
    let hex = sha1_smol::Sha1::from(value.as_bytes()).digest().to_string();
    bytes::Bytes::copy_from_slice(&hex.as_bytes()[..16])
}
