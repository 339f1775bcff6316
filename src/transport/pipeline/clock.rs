//! The clock guard's part of a connection: a `TIME` queued before the first acquire of each write
//! (and one at connect, and one whenever the connection has gone [`IDLE_SAMPLE`] without), and its
//! reply judged by `crate::algo::clock` before the replies of the acquires behind it are handed over.
//! One per write is as good as one per acquire: the node runs the write's commands back to back, so a
//! jump between the `TIME` and an acquire behind it would have to fall in the same microseconds either
//! way, and the reader judges the `TIME` before it completes any of them.

use std::time::Duration;

use tokio::time::Instant;

use super::request::Request;
use super::state::{Shared, State};
use crate::algo::clock::{Sample, Step};
use crate::error::NodeError;
use crate::protocol::cmd::{NodeResult, Reply};

/// The longest a connection goes without reading its node's clock. Acquires read it anyway; this is
/// for an engine that holds plain locks and acquires nothing for a while, whose locks could otherwise
/// not learn that a node they counted jumped (`Lock::is_valid`): a holder learns of a jump at most
/// this long plus a round trip late, under 100 ms on a local network. About twelve `TIME`s a second
/// per idle node; a busy connection sends its `TIME` with its writes and none of these. Samples this
/// close are judged against a baseline up to half a second old (`crate::algo::clock::WINDOW`), so a
/// small step is not read as a jump for coming soon after the last sample.
pub(super) const IDLE_SAMPLE: Duration = Duration::from_millis(80);

/// Queues a `TIME` for the clock guard (see `Request::clock`).
pub(super) fn queue_sample(st: &mut State) {
    // Behind the releases queued before it, like any other command.
    super::coalesce::close(st);
    let now = Instant::now();
    st.out.extend_from_slice(b"*1\r\n$4\r\nTIME\r\n");
    st.push(Request {
        clock: Some(now),
        ..Request::plain(None, None)
    });
    st.last_sample = now;
    st.sampled = true;
}

/// The clock guard's `TIME` reply: judged against the node's previous one. A reply that is not a
/// `TIME` (an error, a hostile node) teaches nothing and changes nothing.
pub(super) fn judge(shared: &Shared, sent: Instant, reply: NodeResult) {
    let node_us = match reply {
        Ok(Reply::Time(node_us)) => node_us,
        Err(NodeError::Server(why)) => {
            // An ACL without `+time`, say: the guard is blind on this node. Once per connection.
            if !std::mem::replace(&mut shared.lock().time_refused, true) {
                tracing::warn!(
                    node = %shared.addr,
                    why = %why,
                    "the node refuses TIME: the clock-jump guard cannot watch its clock"
                );
            }
            return;
        }
        _ => return,
    };
    let sample = Sample {
        node_us,
        sent,
        received: Instant::now(),
    };
    match shared.clock.observe(sample) {
        Step::Steady => {}
        Step::Forward(ahead) => {
            tracing::warn!(
                node = %shared.addr,
                ahead_ms = ahead.as_millis() as u64,
                "node's wall clock jumped forward (its keys expire early): its votes do not count for max_ttl"
            );
            metrics::counter!("redlock_clock_jumps_total", "node" => shared.addr.to_string(), "direction" => "forward").increment(1);
        }
        Step::Backward(behind) => {
            tracing::info!(
                node = %shared.addr,
                behind_ms = behind.as_millis() as u64,
                "node's wall clock jumped backward (its keys live longer than their TTL)"
            );
            metrics::counter!("redlock_clock_jumps_total", "node" => shared.addr.to_string(), "direction" => "backward").increment(1);
        }
    }
}
