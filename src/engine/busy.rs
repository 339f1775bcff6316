//! Who holds a busy lock and for how long: read from the nodes once, when an acquire gives up to
//! another owner ([`Core::busy`]), so the caller's error says when to come back
//! ([`LockError::retry_after`]) and whose the lock is ([`LockError::holder`]).
//!
//! Read when the call gives up, not beside every attempt: a plain attempt is one `SET NX PX`, whose
//! nil says nothing more, and a `PTTL` and a label read behind every attempt would double what a
//! contended lock costs the nodes while nobody looks. One short round (at most a round timeout),
//! paid only by a call that returns "busy".
//!
//! The time is the nodes' `PTTL`s (per node the longest of the lock's keys: the holder's key, a
//! reader set, a semaphore's permits), durations on each node's own clock, compared with nothing:
//! the holder's keys are gone from a majority once the `q`-th shortest has run out (`q` the
//! quorum), unless the holder extends or renews first. A node whose lock key has no expiry, or that
//! does not answer, counts as never. The fair lock's wait is its place in the queue, not the
//! holder's time, and does not come through here.

use std::time::Duration;

use tokio::time::Instant;

use super::core::Core;
use super::inspect::gather_until;
use crate::algo::value::LockValue;
use crate::error::LockError;
use crate::protocol::cmd::script_cmd;
use crate::protocol::cmd::{Args, NodeResult, Reply};
use crate::protocol::scripts::BUSY;
use crate::protocol::spec::Target;

impl Core {
    /// `err`, with the holder's time left and label filled in when it is a loss to another owner
    /// (also as a timeout's last error) and the nodes answer within one round's timeout.
    pub(crate) async fn busy(&self, target: &Target, ttl: Duration, err: LockError) -> LockError {
        match err {
            LockError::Contended {
                taken,
                nodes,
                local: false,
                ..
            } => {
                let (retry_after, holder) = self.read_busy(target, ttl).await;
                LockError::Contended {
                    taken,
                    nodes,
                    local: false,
                    retry_after,
                    holder,
                }
            }
            LockError::Timeout {
                attempts,
                last: Some(last),
            } if matches!(*last, LockError::Contended { local: false, .. }) => {
                let last = Box::pin(self.busy(target, ttl, *last)).await;
                LockError::Timeout {
                    attempts,
                    last: Some(Box::new(last)),
                }
            }
            other => other,
        }
    }

    async fn read_busy(
        &self,
        target: &Target,
        ttl: Duration,
    ) -> (Option<Duration>, Option<String>) {
        let cmd = script_cmd(&BUSY, &target.keys, LockValue::ZERO, Args::NONE);
        let until = Instant::now() + self.round_timeout(ttl);
        let replies = gather_until(self, &cmd, until).await;
        let quorum = target.kind.tally(self.nodes().len()).quorum();
        read(replies, quorum)
    }
}

/// The time until `quorum` nodes are free of the key, and the label most nodes show.
fn read(replies: Vec<NodeResult>, quorum: usize) -> (Option<Duration>, Option<String>) {
    let mut free_in: Vec<Option<u64>> = Vec::with_capacity(replies.len());
    let mut labels: Vec<String> = Vec::new();
    for reply in replies {
        let Ok(Reply::Data(data)) = reply else {
            free_in.push(None);
            continue;
        };
        let Some(colon) = data.iter().position(|&b| b == b':') else {
            free_in.push(None);
            continue;
        };
        let pttl = std::str::from_utf8(&data[..colon])
            .ok()
            .and_then(|t| t.parse::<i64>().ok());
        free_in.push(match pttl {
            Some(-2) => Some(0),
            Some(ms) if ms >= 0 => Some(ms as u64),
            _ => None,
        });
        let label = &data[colon + 1..];
        if !label.is_empty() && matches!(pttl, Some(ms) if ms != -2) {
            labels.push(String::from_utf8_lossy(label).into_owned());
        }
    }
    // Nodes that never free up sort last.
    free_in.sort_by_key(|t| t.unwrap_or(u64::MAX));
    let retry_after = quorum
        .checked_sub(1)
        .and_then(|i| free_in.get(i).copied().flatten())
        .map(Duration::from_millis);
    labels.sort();
    let holder = labels
        .chunk_by(|a, b| a == b)
        .max_by_key(|run| run.len())
        .map(|run| run[0].clone());
    (retry_after, holder)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn node(answer: &'static str) -> NodeResult {
        Ok(Reply::Data(Bytes::from_static(answer.as_bytes())))
    }

    #[test]
    fn the_quorum_th_shortest_expiry_and_the_most_common_label() {
        let replies = vec![
            node("900:w-1"),
            node("300:w-1"),
            node("-2:"),
            Err(crate::error::NodeError::Timeout),
            node("700:w-2"),
        ];
        // Free now on one node, in 300 ms on a second, 700 ms on a third: a majority of 5.
        let (after, holder) = read(replies, 3);
        assert_eq!(after, Some(Duration::from_millis(700)));
        assert_eq!(holder.as_deref(), Some("w-1"));
    }

    #[test]
    fn no_expiry_or_no_answer_is_never() {
        let replies = vec![
            node("-1:"),
            node("500:"),
            Err(crate::error::NodeError::Timeout),
        ];
        assert_eq!(read(replies, 2), (None, None));
        assert_eq!(read(vec![node("garbage")], 1), (None, None));
    }
}
