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
//!
//! A leaf: generic over what is handed off (`T`, a lock for the engine), it knows nothing of locks or
//! nodes, and is tested alone below.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use bytes::Bytes;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::time::Instant;

/// The engine's local queues, one per resource with a holder or a waiter.
pub(crate) struct LocalQueues<T> {
    map: Mutex<HashMap<Bytes, Arc<LocalQueue<T>>>>,
    /// Set by [`close`](Self::close), under the map's lock: every queue made later is closed too.
    closed: std::sync::atomic::AtomicBool,
    /// Releases (in the background) a handed-off lock that no waiter will take; set by the engine.
    orphans: std::sync::OnceLock<Orphans<T>>,
}

type Orphans<T> = Box<dyn Fn(T) + Send + Sync>;

impl<T> Default for LocalQueues<T> {
    fn default() -> Self {
        Self {
            map: Mutex::default(),
            closed: Default::default(),
            orphans: std::sync::OnceLock::new(),
        }
    }
}

impl<T> std::fmt::Debug for LocalQueues<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalQueues").finish_non_exhaustive()
    }
}

#[derive(Debug)]
pub(crate) struct LocalQueue<T> {
    permit: Arc<Semaphore>,
    /// A lock handed off by the last holder, for the next one.
    handoff: Mutex<Option<T>>,
    /// Tasks waiting for the permit (so a releaser knows whether to hand off).
    waiting: AtomicUsize,
    /// The current holder's `valid_until`: waiters stop queueing behind a lock that has expired
    /// (a holder that neither released nor dropped it must not block this process past its TTL).
    holder_until: Mutex<Option<Instant>>,
    /// The last release on the nodes reported a client waiting in another process (see
    /// `kinds::exclusive::MARK_WAITING`): the next one yields to it before letting local waiters in.
    remote_waiting: Arc<AtomicBool>,
    /// What the engine keeps for the queue's successive heads while it lives (the hand-off's named
    /// subscription: one per queue, not one per head, so heads do not resubscribe in turn).
    kept: Mutex<Option<Arc<dyn std::any::Any + Send + Sync>>>,
}

/// This task's place at the head of a resource's local queue; held inside the lock (`crate::Lock`).
/// Dropping it lets the next local waiter in.
#[derive(Debug)]
pub(crate) struct LocalHold<T> {
    queues: Weak<LocalQueues<T>>,
    key: Bytes,
    queue: Arc<LocalQueue<T>>,
    permit: Option<OwnedSemaphorePermit>,
}

impl<T> LocalQueues<T> {
    /// Sets how orphaned hand-offs are released (once, when the engine is built).
    pub(crate) fn on_orphan(&self, release: Orphans<T>) {
        let _ = self.orphans.set(release);
    }

    fn orphan(&self, lock: Option<T>) {
        if let (Some(lock), Some(release)) = (lock, self.orphans.get()) {
            release(lock);
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Bytes, Arc<LocalQueue<T>>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The engine shuts down: every queue's turn is closed, so its waiters stop waiting (they go on
    /// to their attempt, which the engine refuses), and so is every queue made later.
    pub(crate) fn close(&self) {
        let map = self.lock();
        self.closed.store(true, Ordering::Release);
        for queue in map.values() {
            queue.permit.close();
        }
    }

    fn queue(&self, key: &Bytes) -> Arc<LocalQueue<T>> {
        let mut map = self.lock();
        let closed = self.closed.load(Ordering::Acquire);
        map.entry(key.clone())
            .or_insert_with(|| {
                let permit = Semaphore::new(1);
                if closed {
                    permit.close();
                }
                Arc::new(LocalQueue {
                    permit: Arc::new(permit),
                    handoff: Mutex::new(None),
                    waiting: AtomicUsize::new(0),
                    holder_until: Mutex::new(None),
                    remote_waiting: Arc::default(),
                    kept: Mutex::new(None),
                })
            })
            .clone()
    }

    /// Waits (FIFO) for the head of `key`'s queue; `None` if the current holder's lock expired first
    /// (then contend on the nodes without queueing). Cancel-safe: a dropped wait leaves the queue.
    pub(crate) async fn enter(self: &Arc<Self>, key: &Bytes) -> Option<LocalHold<T>> {
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
    pub(crate) fn try_enter(self: &Arc<Self>, key: &Bytes) -> Result<Option<LocalHold<T>>, ()> {
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
        queue: Arc<LocalQueue<T>>,
        permit: Option<OwnedSemaphorePermit>,
    ) -> LocalHold<T> {
        LocalHold {
            queues: Arc::downgrade(self),
            key: key.clone(),
            queue,
            permit,
        }
    }

    /// Drops the queue from the map when nobody holds, waits for or references it.
    fn forget_if_idle(&self, key: &Bytes, queue: &Arc<LocalQueue<T>>) -> Option<T> {
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

impl<T> LocalQueue<T> {
    fn holder_until(&self) -> Option<Instant> {
        *self.holder_until.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct WaitingGuard<T> {
    queues: Weak<LocalQueues<T>>,
    key: Bytes,
    queue: Arc<LocalQueue<T>>,
}

impl<T> Drop for WaitingGuard<T> {
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

impl<T> LocalHold<T> {
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

    /// What the queue keeps for its heads (see `LocalQueue::kept`), made by `make` the first time.
    pub(crate) fn kept<K: std::any::Any + Send + Sync>(&self, make: impl FnOnce() -> K) -> Arc<K> {
        let mut kept = self.queue.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = kept.as_ref().and_then(|k| k.clone().downcast::<K>().ok()) {
            return k;
        }
        let k = Arc::new(make());
        *kept = Some(k.clone());
        k
    }

    /// Leaves `lock` for the next local holder.
    pub(crate) fn hand_off(&self, lock: T) {
        *self.queue.handoff.lock().unwrap_or_else(|p| p.into_inner()) = Some(lock);
    }

    /// Takes a lock handed off by the previous local holder, if any.
    pub(crate) fn take_handoff(&self) -> Option<T> {
        self.queue
            .handoff
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Lets the next waiter in now; returns a handed-off lock nobody will take (to release it).
    pub(crate) fn leave(mut self) -> Option<T> {
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

impl<T> Drop for LocalHold<T> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn key(k: &'static [u8]) -> Bytes {
        Bytes::from_static(k)
    }

    #[tokio::test]
    async fn one_holder_at_a_time_and_a_hand_off_reaches_the_next() {
        let queues: Arc<LocalQueues<u32>> = Arc::default();
        let first = queues.try_enter(&key(b"r")).unwrap().unwrap();
        first.set_valid_until(Instant::now() + Duration::from_secs(10));
        assert!(queues.try_enter(&key(b"r")).is_err(), "held");
        assert!(queues.try_enter(&key(b"other")).is_ok(), "per resource");
        let waiter = tokio::spawn({
            let queues = queues.clone();
            async move { queues.enter(&key(b"r")).await }
        });
        while !first.has_waiters() {
            tokio::task::yield_now().await;
        }
        first.hand_off(7);
        assert_eq!(first.leave(), None, "a waiter takes it");
        let next = waiter.await.unwrap().expect("the head of the queue");
        assert_eq!(next.take_handoff(), Some(7));
    }

    #[tokio::test]
    async fn a_hand_off_nobody_takes_is_orphaned() {
        let queues: Arc<LocalQueues<u32>> = Arc::default();
        let orphaned = Arc::new(Mutex::new(Vec::new()));
        queues.on_orphan(Box::new({
            let orphaned = orphaned.clone();
            move |t| orphaned.lock().unwrap().push(t)
        }));
        let hold = queues.try_enter(&key(b"r")).unwrap().unwrap();
        hold.hand_off(3);
        assert_eq!(hold.leave(), Some(3), "no waiter: back to the caller");
        let hold = queues.try_enter(&key(b"r")).unwrap().unwrap();
        hold.hand_off(4);
        drop(hold);
        assert_eq!(
            *orphaned.lock().unwrap(),
            vec![4],
            "dropped: released by the callback"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn waiters_stop_queueing_behind_an_expired_holder() {
        let queues: Arc<LocalQueues<u32>> = Arc::default();
        let hold = queues.try_enter(&key(b"r")).unwrap().unwrap();
        hold.set_valid_until(Instant::now() + Duration::from_millis(50));
        assert!(
            queues.enter(&key(b"r")).await.is_none(),
            "expired: go to the nodes"
        );
        assert!(matches!(queues.try_enter(&key(b"r")), Ok(None)));
        drop(hold);
    }
}
