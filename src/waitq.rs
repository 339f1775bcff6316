//! Waiting in-process: a FIFO queue per resource, and bounded local hand-off ("lock cohorting").
//!
//! Many tasks of one process waiting for the same resource should not all hammer the nodes: each
//! resource has a local one-permit FIFO semaphore, taken before contending on the nodes and held with
//! the lock. Only the task at the head contends; a release wakes the next one directly.
//!
//! **Cohorting** (Dice, Marathe, Shavit 2012): when a local task is waiting at release time, the lock
//! is passed to it without releasing on the nodes — at most `max_local_handoffs` times in a row, and only
//! while enough validity is left (the receiver extends it if needed). Two round trips (release, acquire)
//! become zero or one, and other processes still get their turn after the bound.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use bytes::Bytes;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::time::Instant;

use crate::lock::Lock;

/// The engine's local queues, one per resource with a holder or a waiter.
#[derive(Default)]
pub(crate) struct LocalQueues {
    map: Mutex<HashMap<Bytes, Arc<LocalQueue>>>,
    /// Releases (in the background) a handed-off lock that no waiter will take; set by the engine.
    orphans: std::sync::OnceLock<Box<dyn Fn(Lock) + Send + Sync>>,
}

impl std::fmt::Debug for LocalQueues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalQueues").finish_non_exhaustive()
    }
}

#[derive(Debug)]
pub(crate) struct LocalQueue {
    permit: Arc<Semaphore>,
    /// A lock handed off by the last holder, for the next one.
    handoff: Mutex<Option<Lock>>,
    /// Tasks waiting for the permit (so a releaser knows whether to hand off).
    waiting: AtomicUsize,
    /// The current holder's `valid_until`: waiters stop queueing behind a lock that has expired
    /// (a holder that neither released nor dropped it must not block this process past its TTL).
    holder_until: Mutex<Option<Instant>>,
    /// The last release on the nodes reported a client waiting in another process (see
    /// `scripts::MARK_WAITING`): the next one yields to it before letting local waiters in.
    remote_waiting: Arc<AtomicBool>,
}

/// This task's place at the head of a resource's local queue; held inside the [`Lock`]. Dropping it
/// lets the next local waiter in.
#[derive(Debug)]
pub(crate) struct LocalHold {
    queues: Weak<LocalQueues>,
    key: Bytes,
    queue: Arc<LocalQueue>,
    permit: Option<OwnedSemaphorePermit>,
}

impl LocalQueues {
    /// Sets how orphaned hand-offs are released (once, when the engine is built).
    pub(crate) fn on_orphan(&self, release: Box<dyn Fn(Lock) + Send + Sync>) {
        let _ = self.orphans.set(release);
    }

    fn orphan(&self, lock: Option<Lock>) {
        if let (Some(lock), Some(release)) = (lock, self.orphans.get()) {
            release(lock);
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Bytes, Arc<LocalQueue>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn queue(&self, key: &Bytes) -> Arc<LocalQueue> {
        self.lock()
            .entry(key.clone())
            .or_insert_with(|| {
                Arc::new(LocalQueue {
                    permit: Arc::new(Semaphore::new(1)),
                    handoff: Mutex::new(None),
                    waiting: AtomicUsize::new(0),
                    holder_until: Mutex::new(None),
                    remote_waiting: Arc::default(),
                })
            })
            .clone()
    }

    /// Waits (FIFO) for the head of `key`'s queue; `None` if the current holder's lock expired first
    /// (then contend on the nodes without queueing). Cancel-safe: a dropped wait leaves the queue.
    pub(crate) async fn enter(self: &Arc<Self>, key: &Bytes) -> Option<LocalHold> {
        let queue = self.queue(key);
        queue.waiting.fetch_add(1, Ordering::AcqRel);
        // Counts down also if this future is dropped while waiting.
        let waiting = WaitingGuard {
            queues: Arc::downgrade(self),
            key: key.clone(),
            queue: queue.clone(),
        };
        let mut permit = std::pin::pin!(queue.permit.clone().acquire_owned());
        loop {
            let until = queue
                .holder_until()
                .unwrap_or_else(|| Instant::now() + RECHECK);
            tokio::select! {
                permit = &mut permit => {
                    drop(waiting);
                    return Some(self.hold(key, queue, permit.ok()));
                }
                _ = tokio::time::sleep_until(until) => {
                    if queue.holder_until().is_some_and(|u| u <= Instant::now()) {
                        return None;
                    }
                }
            }
        }
    }

    /// Takes the head of `key`'s queue if free, without waiting: `Ok(Some)` when free, `Ok(None)` when
    /// the holder's lock has expired (go to the nodes without queueing), `Err(())` when held.
    pub(crate) fn try_enter(self: &Arc<Self>, key: &Bytes) -> Result<Option<LocalHold>, ()> {
        let queue = self.queue(key);
        match queue.permit.clone().try_acquire_owned() {
            Ok(permit) => Ok(Some(self.hold(key, queue, Some(permit)))),
            Err(TryAcquireError::NoPermits | TryAcquireError::Closed) => {
                let expired = queue.holder_until().is_some_and(|u| u <= Instant::now());
                self.forget_if_idle(key, &queue);
                if expired {
                    Ok(None)
                } else {
                    Err(())
                }
            }
        }
    }

    fn hold(
        self: &Arc<Self>,
        key: &Bytes,
        queue: Arc<LocalQueue>,
        permit: Option<OwnedSemaphorePermit>,
    ) -> LocalHold {
        LocalHold {
            queues: Arc::downgrade(self),
            key: key.clone(),
            queue,
            permit,
        }
    }

    /// Drops the queue from the map when nobody holds, waits for or references it.
    fn forget_if_idle(&self, key: &Bytes, queue: &Arc<LocalQueue>) -> Option<Lock> {
        let mut map = self.lock();
        // One reference in the map, one in the caller's hand: nobody else can reach it, and new
        // users must take the map lock to get it.
        if Arc::strong_count(queue) == 2 && queue.waiting.load(Ordering::Acquire) == 0 {
            map.remove(key);
            return queue
                .handoff
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
        }
        None
    }
}

/// How often a waiter looks again when the holder's validity is not known yet.
const RECHECK: std::time::Duration = std::time::Duration::from_millis(100);

impl LocalQueue {
    fn holder_until(&self) -> Option<Instant> {
        *self.holder_until.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct WaitingGuard {
    queues: Weak<LocalQueues>,
    key: Bytes,
    queue: Arc<LocalQueue>,
}

impl Drop for WaitingGuard {
    fn drop(&mut self) {
        let left = self.queue.waiting.fetch_sub(1, Ordering::AcqRel) - 1;
        if left > 0 {
            return;
        }
        // The last waiter left (given up or cancelled). If the permit is free, nobody will take a lock
        // handed off for the waiters: release it instead of leaving it to its TTL.
        if let Ok(_permit) = self.queue.permit.clone().try_acquire_owned() {
            let orphan = self
                .queue
                .handoff
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            if let Some(queues) = self.queues.upgrade() {
                queues.orphan(orphan);
                drop(_permit);
                let _ = queues.forget_if_idle(&self.key, &self.queue);
            }
        }
    }
}

impl LocalHold {
    /// Records the holder's current end of validity (after acquire, hand-off and every extend).
    pub(crate) fn set_valid_until(&self, until: Instant) {
        *self
            .queue
            .holder_until
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(until);
    }

    /// Whether another local task is waiting for this resource.
    pub(crate) fn has_waiters(&self) -> bool {
        self.queue.waiting.load(Ordering::Acquire) > 0
    }

    /// Whether a client in another process was waiting at the last release on the nodes.
    pub(crate) fn remote_waiting(&self) -> bool {
        self.queue.remote_waiting.load(Ordering::Acquire)
    }

    /// The flag behind [`remote_waiting`](Self::remote_waiting), to set once a release's replies are in
    /// (possibly after this hold has been left).
    pub(crate) fn remote_waiting_flag(&self) -> Arc<AtomicBool> {
        self.queue.remote_waiting.clone()
    }

    /// Leaves `lock` for the next local holder.
    pub(crate) fn hand_off(&self, lock: Lock) {
        *self.queue.handoff.lock().unwrap_or_else(|p| p.into_inner()) = Some(lock);
    }

    /// Takes a lock handed off by the previous local holder, if any.
    pub(crate) fn take_handoff(&self) -> Option<Lock> {
        self.queue
            .handoff
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Lets the next waiter in now; returns a handed-off lock nobody will take (to release it).
    pub(crate) fn leave(mut self) -> Option<Lock> {
        *self
            .queue
            .holder_until
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = None;
        self.permit.take();
        let queues = self.queues.upgrade()?;
        queues.forget_if_idle(&self.key, &self.queue)
    }
}

impl Drop for LocalHold {
    fn drop(&mut self) {
        // `leave` already did this when it ran; otherwise: the lock was dropped without release.
        if self.permit.take().is_some() {
            *self
                .queue
                .holder_until
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = None;
            if let Some(queues) = self.queues.upgrade() {
                let orphan = queues.forget_if_idle(&self.key, &self.queue);
                queues.orphan(orphan);
            }
        }
    }
}
