//! [`Observe`]: an election's leaders as they change, in term order, without polling: a message on
//! the leader record's channel (published by every write of a record and every resignation, on
//! each node) or the subscription becoming active triggers a read of the majority's leader; a slow
//! timer re-reads in case messages were missed (a subscriber connection that reconnected, a node
//! restarted), and a read that could not tell is followed by another soon. A leader is reported when its `(term, revision)` is above the last one reported:
//! never a lower term, whatever order reads come back in.

use std::fmt;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::stream::{self, Stream, StreamExt};
use tokio::sync::Notify;

use super::keys::ElectionKeys;
use super::leader::{read, Leader};
use crate::engine::Redlock;
use crate::error::LockError;
use crate::transport::subscriber::Subscription;

/// Leader changes of an election, from [`crate::Election::observe`]: a [`Stream`] of [`Leader`]s
/// (or `.next().await` without importing a stream trait).
///
/// Each item is the leader a majority of nodes shows, with a `(term, revision)` above the previous
/// item's: a new leader, or the same one after a [`crate::Leadership::proclaim`]. Terms never go
/// back. A leadership that begins and ends between two reads can be missed; the end of one without
/// a successor is not an item (the next leader is). Node restarts and reconnects are survived;
/// the stream ends only when the engine is shut down.
#[must_use = "a stream does nothing until polled"]
pub struct Observe {
    inner: Pin<Box<dyn Stream<Item = Leader> + Send>>,
}

impl fmt::Debug for Observe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observe").finish_non_exhaustive()
    }
}

impl Observe {
    /// The next leader change (`None` once the engine is shut down).
    pub async fn next(&mut self) -> Option<Leader> {
        self.inner.next().await
    }
}

impl Stream for Observe {
    type Item = Leader;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Leader>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// What the stream carries from one item to the next.
struct Watch {
    engine: Redlock,
    keys: ElectionKeys,
    ttl: Duration,
    /// `(term, revision)` of the last leader reported.
    last: Option<(u64, u64)>,
    /// Subscribed on the first poll (the notifier's tasks need a runtime).
    subscription: Option<Subscription>,
}

/// How often a watch re-reads without a message: slow, it only covers missed messages.
fn fallback(ttl: Duration) -> Duration {
    ttl.clamp(Duration::from_secs(1), Duration::from_secs(30))
}

/// The first pause after a read that could not tell (too few nodes counted: down, quarantined),
/// doubling up to [`fallback`]: the message that announced a change may have come during that
/// read, and no other comes while the leader stays.
const UNTOLD_FIRST: Duration = Duration::from_millis(100);

/// The leaders of the election at `keys`, read with rounds fitted to `ttl`.
pub(super) fn observe(engine: Redlock, keys: ElectionKeys, ttl: Duration) -> Observe {
    let watch = Watch {
        engine,
        keys,
        ttl,
        last: None,
        subscription: None,
    };
    Observe {
        inner: Box::pin(stream::unfold(watch, next)),
    }
}

async fn next(mut watch: Watch) -> Option<(Leader, Watch)> {
    let core = watch.engine.core().clone();
    // Without notifications (`Config::notify_releases` off) the timer alone drives the reads.
    let quiet = Arc::new(Notify::new());
    let mut untold: Option<Duration> = None;
    loop {
        if core.is_closed() {
            return None;
        }
        if watch.subscription.is_none() && core.settings().notify_releases {
            watch.subscription = Some(core.notifier().subscribe(&watch.keys.record));
        }
        let notify = watch
            .subscription
            .as_ref()
            .map_or_else(|| quiet.clone(), Subscription::notify);
        // Armed before the read: a message that comes in while it runs triggers another.
        let mut message = pin!(notify.notified());
        message.as_mut().enable();
        let slow = fallback(watch.ttl);
        match read(&core, &watch.keys, watch.ttl).await {
            Ok(Some(leader)) if watch.last.is_none_or(|last| leader.order() > last) => {
                watch.last = Some(leader.order());
                return Some((leader, watch));
            }
            Err(LockError::Closed) => return None,
            // Nodes that cannot tell now: ask again soon, then less and less often.
            Err(_) => untold = Some(untold.map_or(UNTOLD_FIRST, |d| (d * 2).min(slow))),
            // No leader, the one reported already, or an older one: wait for the next change.
            Ok(_) => untold = None,
        }
        tokio::select! {
            // News: if the nodes still cannot tell, ask again soon.
            _ = message => untold = None,
            _ = tokio::time::sleep(untold.unwrap_or(slow)) => {}
        }
    }
}
