//! Coalesced releases: owner-checked releases queued back to back on one connection go out as one
//! script call (`EVALSHA RELEASE_MANY n keys... values...`), answered with one character per lock.
//!
//! Why: the nodes bound throughput on a lock service, and a release is a whole script call for one
//! `GET` + `DEL`. Sixteen releases in one call cost the node about a third of sixteen calls on present
//! keys (`results/2026-12-01/release-batch/`).
//!
//! Why it answers exactly what the single calls would:
//! - **Same order on the node.** Only *consecutive* releases join a group: any other command queued
//!   on the connection (an acquire, an extend, a clock reading, a resend) closes the open group
//!   first, and the writer closes it before it takes the buffer. The group is encoded where its first
//!   member was queued, and nothing was queued between its members, so the node runs the same
//!   `GET`/`DEL`s in the same order as the single calls, with nothing else in between.
//! - **Per-lock answers.** Each lock's answer depends only on its own key (compare its value, delete),
//!   and the many-lock script reads each key with `pcall`, so an odd key answers `e` for itself
//!   without failing the rest or stopping the script halfway. Each member's waiter gets the reply the
//!   single script would have given: `1`/`2` deleted (and told a waiter), `0` gone, `-` someone
//!   else's, `e` a server error.
//! - **Whole-call failures are every member's.** An error reply (the connection lost, a script
//!   error, a wrong-typed answer) fails every member, just as it would have failed each single call
//!   sent in its place; `NOSCRIPT` resends the group once as `EVAL`, like a single release. Never a
//!   replay: a group lost with its connection fails, like any request.
//! - A group of one is sent as the plain single script, so an uncontended release is unchanged.
//!
//! - **Any slots per group on a cluster shard.** A cluster refuses a script whose *declared* keys
//!   span slots (`CROSSSLOT`), and releases of distinct resources almost never share one: so a
//!   shard's group is sent in its any-slot form, the keys in `ARGV` (`Coalesced::any_slot`), where
//!   the node checks each key as the script touches it. A key it does not serve now (its slot
//!   migrating away or moved, the cluster down) fails that key's `GET` alone, before anything was
//!   done to it, and answers `m`: that member is sent again as its single release on this
//!   connection, where its declared key gets the `MOVED`/`ASK` that `redirect` follows. Not a
//!   replay: nothing ran for that key, and a release is owner-checked, so even a late duplicate
//!   could delete only our own value. Measured: `results/2026-12-02/cluster-coalesce/`.
//!
//! Only the pipelined transport coalesces (standalone nodes and the cluster shards it carries; the
//! fred transport sends one call per release).

use bytes::Bytes;
use tokio::sync::oneshot;

use super::redirect::Waiters;
use super::request::{Request, Route};
use super::state::{Group, Shared, State};
use crate::algo::value::LockValue;
use crate::error::NodeError;
use crate::protocol::cmd::{Args, Cmd, Coalesced, Keys, NodeResult, Op, Reply};
use crate::transport::resp::encode_cmd;
use crate::transport::ConnectOptions;

/// Most locks in one call: past 16 the node's saving per lock levels off, and a long script holds
/// the node's single thread (measured: 16 ≈ 32 ≈ 64 per key).
pub(super) const MAX_GROUP: usize = 16;

/// The lock `cmd` would add to a group, if it is a release the node set may coalesce: the single
/// script of one of `opts.coalesce`, on one key, with no argument past the value.
pub(super) fn member(opts: &ConnectOptions, cmd: &Cmd) -> Option<Member> {
    let Cmd::Script {
        script,
        keys: Keys::One(key),
        value,
        args,
    } = cmd
    else {
        return None;
    };
    if !args.as_slice().is_empty() {
        return None;
    }
    let form = opts
        .coalesce
        .iter()
        .find(|form| form.one.op == script.op && script.op != Op::Own)?;
    Some((form, key.clone(), *value))
}

/// A release that may join a group: its coalesced form, key and value.
pub(super) type Member = (&'static Coalesced, Bytes, LockValue);

/// Adds one release to the open group (opening one if there is none, it is full, or it is of the
/// other form) and registers its waiter.
/// `cluster`: the connection is a cluster shard's (the group goes out in its any-slot form).
pub(super) fn join(
    st: &mut State,
    (form, key, value): Member,
    tx: oneshot::Sender<NodeResult>,
    cluster: bool,
) {
    let joins = st
        .group
        .as_ref()
        .is_some_and(|g| g.form.one.op == form.one.op && g.locks.len() < MAX_GROUP);
    if !joins {
        close(st);
        st.group = Some(Group {
            form,
            cluster,
            locks: Vec::with_capacity(4),
        });
        st.push(Request {
            group: Vec::with_capacity(4),
            ..Request::plain(None, None)
        });
    }
    if let (Some(group), Some(slot)) = (st.group.as_mut(), st.pending.back_mut()) {
        group.locks.push((key, value));
        slot.group.push(tx);
    }
}

/// Encodes the open group, if any, at the end of the output buffer: as the single script for a
/// group of one, as one many-lock call otherwise. Called before anything else is queued and before
/// the writer takes the buffer, which is what keeps the wire order.
pub(super) fn close(st: &mut State) {
    let Some(Group {
        form,
        cluster,
        mut locks,
    }) = st.group.take()
    else {
        return;
    };
    let Some(slot) = st.pending.back_mut() else {
        return;
    };
    let cmd = if locks.len() == 1 {
        let (key, value) = locks.remove(0);
        slot.tx = slot.group.pop();
        Cmd::Script {
            script: form.one,
            keys: Keys::One(key),
            value,
            args: Args::NONE,
        }
    } else {
        Cmd::ReleaseMany {
            script: if cluster { form.any_slot } else { form.many },
            locks: locks.into(),
            keys_in_argv: cluster,
        }
    };
    encode_cmd(&mut st.out, &cmd, false);
    slot.script = Some(cmd);
}

/// Hands a coalesced release's reply to its members, one answer each (see the module comment).
pub(super) fn answer(
    shared: &Shared,
    generation: u64,
    group: Vec<oneshot::Sender<NodeResult>>,
    script: Option<Cmd>,
    reply: NodeResult,
    route: Route,
) {
    if let Err(e) = &reply {
        if crate::transport::resp::is_noscript(e) {
            return match script {
                Some(cmd) if route.redirected => {
                    shared.forward_on(generation, &cmd, true, Waiters::Group(group), route, false)
                }
                Some(cmd) => resend(shared, generation, &cmd, group),
                None => fail_all(group, reply.err().unwrap_or(NodeError::Disconnected)),
            };
        }
    }
    // Forwarded here by a redirect: counts only if this connection votes (see `redirect`).
    let codes = match shared.muted(route, reply) {
        Ok(Reply::Data(codes)) if codes.len() == group.len() => codes,
        Err(e) => return fail_all(group, e),
        Ok(Reply::Data(codes)) => {
            let why = format!(
                "coalesced release: {} answers for {} locks",
                codes.len(),
                group.len()
            );
            return fail_all(group, NodeError::Protocol(why));
        }
        Ok(other) => return fail_all(group, other.unexpected("coalesced release")),
    };
    for (i, (tx, code)) in group.into_iter().zip(codes.iter()).enumerate() {
        if *code == b'm' {
            // Not served here now; nothing was done to it: its single release follows the slot.
            match single(shared.opts.coalesce, script.as_ref(), i) {
                Some(cmd) => {
                    shared.forward_on(generation, &cmd, false, Waiters::One(tx), route, false)
                }
                None => {
                    let why =
                        "coalesced release: `m` for a lock of a group not sent in any-slot form";
                    let _ = tx.send(Err(NodeError::Protocol(why.into())));
                }
            }
            continue;
        }
        let _ = tx.send(match code {
            b'1' => Ok(Reply::Int(1)),
            b'2' => Ok(Reply::Int(2)),
            b'0' => Ok(Reply::Int(0)),
            b'-' => Ok(Reply::Int(-1)),
            b'e' => Err(NodeError::Server(
                "WRONGTYPE the lock key holds a value of another type (coalesced release)".into(),
            )),
            _ => Err(NodeError::Protocol(
                "coalesced release: an answer is none of 1, 2, 0, -, e".into(),
            )),
        });
    }
}

/// Member `i` of the any-slot group `script` as its single release.
fn single(forms: &[Coalesced], script: Option<&Cmd>, i: usize) -> Option<Cmd> {
    let Some(Cmd::ReleaseMany {
        script,
        locks,
        keys_in_argv: true,
    }) = script
    else {
        return None;
    };
    let form = forms
        .iter()
        .find(|form| form.any_slot.op == script.op && script.op != Op::Own)?;
    let (key, value) = locks.get(i)?;
    Some(Cmd::Script {
        script: form.one,
        keys: Keys::One(key.clone()),
        value: *value,
        args: Args::NONE,
    })
}

fn fail_all(group: Vec<oneshot::Sender<NodeResult>>, cause: NodeError) {
    for tx in group {
        let _ = tx.send(Err(cause.clone()));
    }
}

/// The script did not run (cache flushed, node restarted): sends its source once, on this connection
/// only, at the back of the queue like a single release's resend. If the connection was replaced,
/// the members fail: never a replay.
fn resend(shared: &Shared, generation: u64, cmd: &Cmd, group: Vec<oneshot::Sender<NodeResult>>) {
    let mut st = shared.lock();
    if !st.connected || st.generation != generation {
        drop(st);
        return fail_all(group, NodeError::ConnectionLost);
    }
    close(&mut st);
    let wake = st.out.is_empty();
    encode_cmd(&mut st.out, cmd, true);
    st.push(Request {
        group,
        ..Request::plain(None, None)
    });
    shared.end_queueing(st, wake);
}
