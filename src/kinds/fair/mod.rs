//! The fair lock: an exclusive lock granted in **arrival order across processes** — if waiter A's
//! enqueue completed before waiter B's began, A gets the lock before B, unless A gives up, is
//! cancelled or dies (its place is then freed within one TTL). A waiter's enqueue **begins with its
//! first round** and completes after it, or after its second when the nodes disagreed on its ticket
//! (steps 1 and 2 below): one or two round trips. Its files: `spec` (the `Spec`, commands, votes,
//! wake names), `scripts` (the Lua), `wait` (its waiter in the engine's wait loop), `replies` (a round's tally).
//!
//! # Protocol
//! Per node, beside the lock key `prefix{resource}`: a queue `:fair:q` (a sorted set: waiter →
//! ticket; Redis orders equal tickets by member bytes, so `(ticket, waiter)` is ordered the same way
//! on every node), and per waiter a **live key** `:fair:l:` + its wake name, holding the waiter's
//! current **epoch** and its TTL, set with that TTL: an entry is live while its live key exists,
//! so the node's own key expiry times out a waiter that stopped refreshing, and no script reads a
//! clock. The waiter's id is its lock value: 25 bytes, one for the whole acquire, never printed.
//! Each round of the waiter's carries a new epoch, and the unlock after it the next one.
//! 1. **Enqueue** (1 round, also the first try): each node gives the waiter the ticket one above the
//!    highest in its queue, or the waiter's hint if that is higher (replacing any stale entry of the
//!    waiter's own), sets its live key for one TTL, answers that ticket, and grants the lock key if it is
//!    free and the waiter is the head of its live queue. The waiter waits for every answer; if fewer
//!    than a majority answered, it leaves every queue and starts over. Its ticket `T` is the `q`-th
//!    lowest answered (`q` a majority): the highest ticket of its lowest majority. The hint is the
//!    waiter's wall clock in microseconds: where it is above every ticket of a queue, nodes that saw
//!    different enqueues, or saw them in a different order, still give the same ticket, so the agree
//!    round is needed less often. Nothing relies on it: a ticket is above every entry on its node
//!    whatever the hint (a host whose clock is behind gets the tickets it would get without one).
//! 2. **Agree** (1 round, only when fewer than a majority answered `T`): at once, an attempt (step 3)
//!    carrying `T`. The enqueue **completed** once a majority holds `(T, waiter)`: after step 1 when a
//!    majority answered `T`, else after the first attempt that found the entry on a majority.
//! 3. **Attempts** (1 round each, at the waiter's wake-up or its keepalive pause, at most a quarter TTL
//!    apart; a waiter that lost only to the queue's order and listens for messages waits the whole
//!    keepalive, since its turn comes by message, while one that lost to a fault or does not listen
//!    pauses as any lock does): where the node still has the waiter's live entry, it sets its ticket to `T` and
//!    refreshes its live key — it never re-adds an entry it dropped, and an entry whose live key
//!    expired is dropped there — then grants on the same rule. A waiter granted on
//!    a majority holds the lock, with the validity rules of any lock; one granted on fewer releases its
//!    key where it may have been set (the nodes that granted or did not answer) and keeps its place. A
//!    waiter missing from so many queues that no majority can have it leaves and starts over.
//! 4. **Release** deletes the holder's entry and live key and, where the key was the holder's (or
//!    the holder was the head), **hands the key to the live head**: sets it to the head's value for
//!    the TTL its live key holds, and publishes on the head's engine's channel its wake name, `g`
//!    and 16 hex digits of the SHA1 of its value, `:` and the epoch its live key holds (only its
//!    waiter can compute it). The waiter, between its rounds, counts the nodes heard for its
//!    current epoch — the round's, or its unlock's from the nodes the unlock went to; on a
//!    majority it holds the lock with no round of its own, validity counted from the start of the
//!    round that set that epoch (see below). **Giving up** (error, timeout, the acquire future
//!    dropped) removes the entry, the live key and any key of its own. A release by an engine with
//!    a waiter of its own parked between rounds names the lowest-ticketed one
//!    ([`RELEASE_FAIR_TO`], `crate::engine::successors`): each node then runs step 3's grant rule
//!    for it in the release's script, giving it the key where it is the head with its ticket `T`
//!    and answering so, and hands the key to the live head by message otherwise. Granted on a
//!    majority, the named waiter holds the lock from the release round's start (its own process's
//!    clock), with no round of its own.
//! 5. **Wake-ups**: a script that leaves the key free publishes the **wake name** of the queue's head
//!    ([`wake_name`]: 16 hex digits of the SHA1 of its value; the value itself is a secret and
//!    channels are readable by any subscriber) on the head's engine's channel of the key
//!    ([`wake_channel`]), when it may have changed who can take the key: it freed the key, removed or
//!    moved an entry that was the head, or dropped dead entries. A waiter is woken only by its own
//!    name (or by an empty message), from whichever node names it.
//!
//! The scripts that grant (enqueue, attempt, release), once they find the key free or theirs, take
//! the **live head**: dead entries at the front of the queue (their live key expired) are dropped
//! until a live one (or the waiter's own) is first; one read while the head is alive. A dead
//! entry behind the head stays until it reaches the head: it grants nobody and orders nobody
//! differently, since nobody behind it can be granted at that node before it is dropped. The
//! other scripts (leave, unlock) check no head: a head they name that is dead wakes nobody, and
//! the waiters behind it learn at their next attempt (which drops it and wakes the new head).
//! One script drops at most 1,000 dead entries (a few ms of a node's time). Where it stops there,
//! the head is not known yet: it grants nobody and wakes a waiter behind the run (an attempt or an
//! enqueue wakes its own sender; a release, the queue's last entry), whose attempt drops the next
//! ones. So a long run of waiters that died without leaving is drained in round trips, and never
//! stalls a node in one script.
//!
//! # Why a lock granted by messages is held
//! - *Quorum*: a majority of nodes each published that it set the key to our value for an epoch of
//!   ours that is current for that node (a node's message comes from the node that set the key,
//!   after it did, on a subscriber connection to that node alone; a node that may not vote now is
//!   not counted).
//! - *No key of ours deleted since*: only our own scripts delete our key while we wait. An attempt
//!   where we are not the head (or the head is not known yet) and an unlock after a lost round first set our live key to the
//!   epoch they carry; an attempt that finds no live entry of ours deletes our key where no live
//!   key is left to grant us by; a requeue's leave ends the place (nothing of it is counted after).
//!   A grant for the round's epoch `e` from a node the unlock (epoch `e + 1`) went to may predate
//!   the unlock and is not counted; one for `e + 1` came after it. The next round moves every node
//!   on, and grants of older epochs are never counted. A late copy of an unlock or of a requeue's
//!   leave (sent once, but a `NOSCRIPT` runs it again behind later commands) finds our live key
//!   past its epoch and does nothing.
//! - *Validity*: a node grants epoch `e` only after the command that set `e` there (the round, or
//!   its unlock) reached it, which was sent after the round's start, and that command set our live
//!   key for our full TTL; the key is set until the live key expires. So each key lives at least
//!   until the round's start + TTL by that node's clock: the bound a round that began then would
//!   have (drift and the clock guard's mark from the same moment). A lock with too little validity
//!   left is not taken: our round then finds the keys ours and refreshes them. And a head that died
//!   holds a key no longer than its live key, as its place.
//!
//! # Why arrival order holds
//! Let A's enqueue complete — a majority `M_A` holds `(T_A, A)` — before B's enqueue begins, and A
//! keep waiting.
//! - A's entry at each `x` in `M_A` keeps `T_A`: only A's own scripts change it, and A's attempts carry
//!   `T_A`. (That is why the agree round is part of the enqueue: an entry moved to `T_A` *after* the
//!   enqueue completed could go behind a B that enqueued in between.)
//! - B's enqueue reaches each `x` in `M_A` after A's entry has `T_A` there, so `x` gives B a ticket
//!   above `T_A` (above every entry there, whatever B's hint). B's `T_B` is the highest ticket of a
//!   majority of its answers (the lowest `q`), and that majority meets `M_A`: `T_B > T_A`. At `x`,
//!   B's entry carries the ticket `x` gave it or `T_B`: behind `(T_A, A)` either way. (An entry of
//!   B's left from an earlier place of B's can carry a lower ticket, but it grants nothing: every
//!   round of B's that can grant at `x` first replaces it (an enqueue) or sets it to `T_B` (an
//!   attempt); and a release's grant counts for B only for B's current epoch, which only those
//!   rounds and their unlocks set: an unlock moves the live key on only from its own round's
//!   epoch, so never one left by an earlier place.)
//! - B wins only when a majority grants it for one epoch — in its own round, in a release's that
//!   named it, or by releases' messages (step 4: each the same head rule, at that node and
//!   moment) — and that majority meets `M_A` in some `x`,
//!   whose head is not B while A's entry is there. A's entry leaves `x` only by A's own release (A got
//!   the lock first), A giving up, or its expiry (A stopped refreshing `x` for a whole TTL: dead or
//!   paused past its TTL, which is giving up), and an expired entry leaves only when a script
//!   drops it (at the head, or A's own attempt): until then it is still ahead of B there. (An
//!   operator's forced release is outside this argument: it ends the place of whoever holds the
//!   key on a node, see `scripts::FORCE_ENDS_HOLDER`.) (A
//!   release to a named waiter checks no live key: it grants only the head, A's entry or one
//!   ahead of it.) Hence B is not granted before A.
//!
//! Setting an entry to its waiter's ticket, up or down, moves only that waiter, and never ahead of a
//! place completed before its enqueue began: its `T` is above the ticket of every such place (the
//! meeting argument above), so `(T, waiter)` ranks after all of them on every node. No clock of one node is compared with
//! another's; wake-ups change no node's state, so they take no part in this argument.
//!
//! # Why the queue drains
//! Rank waiters by `(T, waiter)`: every node that one of a waiter's attempts reached holds its entry
//! at `T`, so nodes order them alike. Until then an entry can carry the ticket its node gave (above
//! or below `T`) and two nodes can disagree on the head — until the waiter's next attempt, at most a
//! keepalive pause later. Then the lowest live waiter L is the head of every queue that holds it. If
//! it holds a majority, the keys there are free once the holder releases or expires (a refused
//! waiter's keys are released at once; a stale key of another waiter that is not the head is deleted
//! by that waiter's next round), so L's next attempt wins. If it holds fewer, L notices (its attempts
//! say so) and re-enqueues behind; a dead L's live keys expire within one TTL, and the next
//! waiter's round to find the key free drops L's entry. Either way the head moves on. L's next attempt comes at its wake-up — a script that made it the head with the key free
//! names it — or, when that message is lost (or the key expired silently, or the head a release
//! named had expired), at its keepalive pause: so the argument needs no message. Waiters behind L need not be woken: they cannot be granted
//! before L.
//!
//! # Costs and limits
//! Acquire: 1 round trip when the lock is free (2 when the nodes' tickets disagree), then 1 per
//! attempt while waiting: one per keepalive pause (at most a quarter TTL), one at its
//! subscription's first confirmation, and one when a wake-up names it or a release's grant by
//! message reached too few nodes. A release hands the key to the next head itself (step 4): the
//! head needs no round of its own, nor does any other waiter (`tests/fair_wake.rs`). Release,
//! extend: 1 each; renewal is coalesced like a plain lock's. No local queue: every task, local or
//! not, takes its own place (a local queue would overtake remote waiters). Node commands per grant
//! (64 workers on 4 keys, hold 0, a script's own calls counted): about 13 in one process, 15 with 4
//! processes (`results/2026-12-05/fair-grant-by-message/`).
//! Traces the model test
//! (`tests/it/model/fair/`) found shaped the scripts: a key of ours left by a lost release must not
//! grant us when we are not the head; an enqueue replaces a stale entry of ours; an entry of an
//! earlier place of ours must not rank us by its ticket (an attempt sets it to the current one); a
//! round's unlock is sent once, never re-sent (a late copy deleted a later grant of the same value).
//! Order is only as strong as the entries' expiry allows: a live waiter whose refreshes to a node of
//! its majority are all lost for a TTL loses its place there, like a dead one.

mod replies;
mod scripts;
mod spec;
pub(crate) mod wait;

use std::time::Duration;

use crate::algo::retry::Wait;
use crate::engine::Redlock;
use crate::error::LockError;
use crate::lock::Lock;
pub(crate) use spec::{fair_kind, FAIR};

impl Redlock {
    /// Acquires `resource` as a **fair** lock for `ttl`: a waiter whose enqueue completed before
    /// another's began (its first round) is served first, across processes (see the module doc for
    /// the argument). Waits up to `acquire_timeout`, or without one the time `retry_count` retries
    /// would take; release, extend and renew the lock like any lock.
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
    /// Cost: 1 round trip when free (2 when the nodes' tickets disagree); then none when a release
    /// hands it the lock by message, and 1 per attempt: when it is woken as the head, and a quarter
    /// TTL apart as its keepalive (every retry pause instead without notifications, or when fewer
    /// than a majority of the nodes publish to this engine, as Sentinel-managed nodes do not).
    ///
    /// # Errors
    /// As any wait (the engine's one wait loop): [`LockError::Timeout`] when `acquire_timeout`
    /// passes, the last round's error ([`LockError::Contended`]: still queued) once retries are used
    /// up; either way its place is given up on every node. [`LockError::QuorumNotReached`] when no
    /// enqueue ever reached a majority;
    /// [`LockError::InvalidInput`] as for [`acquire`](Self::acquire).
    #[deprecated(
        since = "0.2.0",
        note = "use `redlock.lock(resource).fair().ttl(ttl)`: a `LockGuard`, released on drop"
    )]
    pub async fn acquire_fair(
        &self,
        resource: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        let target = self.core().target(fair_kind(), resource.as_ref())?;
        let fair = wait::FairWait { core: self.core() };
        fair.acquire_fair(target, ttl, Wait::Configured).await
    }
}
