//! The lock's Redis command stream without the lock algorithm, for `loadgen`'s `raw` engine and the
//! benches: the overhead floor the algorithm is measured against. Not part of the supported API.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::time::Instant;

use crate::algo::quorum::Vote;
use crate::algo::reply::NodeResult;
use crate::algo::value::LockValue;
use crate::engine::fanout::{round, Deadline};
use crate::engine::Redlock;
use crate::protocol::cmd::{Args, Cmd, Keys};
use crate::protocol::scripts::RELEASE;
use crate::protocol::server::Profile;

/// `SET key value NX PX ttl` to every node over the engine's transport; waits for every reply (or
/// `timeout`) and returns how many said OK. No validity, no retry, no release on failure.
pub async fn set_all(
    r: &Redlock,
    key: &Bytes,
    value: LockValue,
    ttl_ms: u64,
    timeout: Duration,
) -> usize {
    let cmd = Cmd::SetNxPx {
        key: key.clone(),
        value,
        ttl_ms,
    };
    yes_votes(r, &cmd, timeout, Vote::of_set).await
}

/// The compare-and-delete script on every node; returns how many deleted.
pub async fn release_all(r: &Redlock, key: &Bytes, value: LockValue, timeout: Duration) -> usize {
    let cmd = Cmd::Script {
        script: &RELEASE,
        keys: Keys::One(key.clone()),
        value,
        args: Args::NONE,
    };
    yes_votes(r, &cmd, timeout, Vote::of_script).await
}

/// How many nodes voted yes on `cmd`, sent to every node of `r` at once and read by `read`, within
/// `timeout` and without deciding early: every raw call counts all the nodes the same way.
async fn yes_votes(
    r: &Redlock,
    cmd: &Cmd,
    timeout: Duration,
    read: fn(NodeResult) -> Vote,
) -> usize {
    round(
        r.core().nodes(),
        cmd,
        Deadline::fixed(Instant::now() + timeout),
        read,
        false,
    )
    .await
    .yes
}

/// Encodes one lock cycle's commands (SET NX PX, then EVALSHA release) the way the pipeline does.
pub fn encode_cycle(out: &mut BytesMut, key: &Bytes, value: LockValue, ttl_ms: u64) {
    crate::transport::encode(
        out,
        &Cmd::SetNxPx {
            key: key.clone(),
            value,
            ttl_ms,
        },
        Profile::default(),
    );
    crate::transport::encode(
        out,
        &Cmd::Script {
            script: &RELEASE,
            keys: Keys::One(key.clone()),
            value,
            args: Args::NONE,
        },
        Profile::default(),
    );
}
