//! The subscriber's lingering channels (see `transport::subscriber`): channels left without users,
//! oldest first, unsubscribed once they have been idle for [`LINGER`] and are still unused.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;

/// How long a lingering channel stays subscribed without users. Long against a waiter's comings
/// and goings (a few ms apart under contention), short against a process that stopped locking.
pub(crate) const LINGER: Duration = Duration::from_secs(2);

/// The idle list.
#[derive(Debug, Default)]
pub(crate) struct Idle(Mutex<VecDeque<(Bytes, Instant)>>);

impl Idle {
    fn list(&self) -> MutexGuard<'_, VecDeque<(Bytes, Instant)>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `channel` lost its last user now; returns the instant to remember it by.
    pub(crate) fn left(&self, channel: &Bytes) -> Instant {
        let now = Instant::now();
        self.list().push_back((channel.clone(), now));
        now
    }

    /// Hands `expire` each channel idle for [`LINGER`] by now, with the instant it went idle (the
    /// caller unsubscribes it unless it has been used since). Cheap enough for every subscribe and
    /// drop: it stops at the first channel still within its time.
    pub(crate) fn sweep(&self, mut expire: impl FnMut(&Bytes, Instant)) {
        let now = Instant::now();
        let mut list = self.list();
        while let Some((channel, since)) = list.front() {
            if now.saturating_duration_since(*since) < LINGER {
                break;
            }
            expire(channel, *since);
            list.pop_front();
        }
    }
}
