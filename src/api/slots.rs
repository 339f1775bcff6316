//! Slot semaphores: the other way to let at most K holders in — K named slots, each an ordinary
//! exclusive lock on a majority, a holder taking any free one ([`Redlock::acquire_slot`]).
//!
//! Against the counting semaphore (`kinds::semaphore`): a slot needs only a majority, so it keeps
//! Redlock's availability for every K (the counting one needs `floor(K·N/(K+1)) + 1` nodes: all 5 of
//! 5 from K = 4 on), and each slot queues locally like any exclusive lock, which keeps its votes from
//! splitting under contention. The price: up to K attempts (round trips) when most slots are busy,
//! and no check that callers agree on K — a caller with a larger K simply uses more slots, so K is
//! the application's contract. `examples/permits_vs_slots.rs` measures both; the repository's
//! `results/README.md` has the figures.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::algo::retry::Wait;
use crate::engine::core::Core;
use crate::engine::wait::{After, Bounds, Ended, Next, Waiter};
use crate::engine::Redlock;
use crate::error::LockError;
use crate::kinds::exclusive::exclusive;
use crate::lock::Lock;
use crate::protocol::spec::Target;

/// Most slots one slot semaphore may have: a busy pass tries each of them, one round trip each.
const MAX_SLOTS: u32 = 64;

impl Redlock {
    /// Acquires one of `slots` slots of `resource` for `ttl`: the exclusive locks `{resource}:slot:0`
    /// to `{resource}:slot:<slots-1>` (one Cluster hash slot), tried from a random one on, then again
    /// after the retry pause until `acquire_timeout` or the time `retry_count` retries would take.
    /// The lock it returns is an ordinary exclusive lock on that slot ([`Lock::resource`] names it):
    /// release, extend and renew it like any lock. At most `slots` holders at once, provided every
    /// caller uses the same `slots` (not checked: see the module doc).
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// use std::time::Duration;
    /// let slot = redlock.acquire_slot(b"exports", 4, Duration::from_secs(30)).await?;
    /// // ... one of at most four exports ...
    /// redlock.release(slot).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// Cost: 1 round trip per slot tried (a slot held by a task of this process costs none).
    ///
    /// # Errors
    /// [`LockError::Contended`] when every slot stayed busy; [`LockError::Timeout`] at
    /// `acquire_timeout`; the last slot's error otherwise (e.g. [`LockError::QuorumNotReached`]);
    /// [`LockError::InvalidInput`] for `slots` 0 or above 64, or a bad resource or TTL.
    #[deprecated(
        since = "0.2.0",
        note = "use `redlock.lock(resource).slots(k).ttl(ttl)`: a `LockGuard`, released on drop"
    )]
    pub async fn acquire_slot(
        &self,
        resource: impl AsRef<[u8]>,
        slots: u32,
        ttl: Duration,
    ) -> Result<Lock, LockError> {
        self.slot(resource.as_ref(), slots, ttl, Wait::Configured)
            .await
    }

    /// Slot semaphore with `slots` slots, waiting as `wait` says (the request's `.slots(k)`); with
    /// [`Wait::Once`] one pass over the slots, each tried once.
    pub(crate) async fn slot(
        &self,
        resource: &[u8],
        slots: u32,
        ttl: Duration,
        wait: Wait,
    ) -> Result<Lock, LockError> {
        if slots == 0 || slots > MAX_SLOTS {
            return Err(LockError::InvalidInput(format!(
                "a slot semaphore needs 1 to {MAX_SLOTS} slots, not {slots}"
            )));
        }
        let core = self.core();
        let ttl = core.check_ttl(ttl)?;
        let targets = (0..slots)
            .map(|i| core.target(exclusive(), &slot_name(resource, i)))
            .collect::<Result<Vec<_>, _>>()?;
        let s = core.settings();
        let budget = s.retry.budget(s.timing.node_timeout(ttl));
        let bounds = Bounds::new(core, wait, Instant::now(), budget);
        core.wait_for(&mut Pass { core, targets, ttl }, bounds)
            .await
    }
}

/// The slot semaphore's waiter: each round a pass over the slots, one attempt each, from a random
/// slot on (contenders spread over the slots instead of all trying 0); the retry pause between
/// passes.
struct Pass<'a> {
    core: &'a Core,
    targets: Vec<Target>,
    ttl: Duration,
}

impl Waiter for Pass<'_> {
    fn wake(&self) -> Option<Arc<Notify>> {
        None
    }

    async fn round(
        &mut self,
        attempts: &mut u32,
        _until: Option<Instant>,
    ) -> Result<Lock, LockError> {
        let first = fastrand::usize(..self.targets.len());
        let mut last = None;
        for j in 0..self.targets.len() {
            let target = self.targets[(first + j) % self.targets.len()].clone();
            // One attempt per slot, without the busy read a caller-facing acquire adds.
            match self
                .core
                .acquire_since(target, self.ttl, Wait::Once, Instant::now())
                .await
            {
                Ok(lock) => {
                    *attempts += lock.attempts();
                    return Ok(lock);
                }
                Err(err) if err.is_retryable() => {
                    if !matches!(err, LockError::Contended { local: true, .. }) {
                        *attempts += 1;
                    }
                    last = Some(err);
                }
                Err(err) => return Err(err),
            }
        }
        Err(last.unwrap_or(LockError::Timeout {
            attempts: *attempts,
            last: None,
        }))
    }

    async fn next(&mut self, _err: &LockError, pause: Duration) -> Next {
        Next::Pause { pause, free: false }
    }

    async fn after(&mut self, _ended: Ended, _until: Instant) -> After {
        After::Round
    }
}

/// The resource name of slot `i`: `{resource}:slot:<i>`, the tag keeping every slot in one Cluster
/// hash slot (a resource that has a tag already keeps it).
fn slot_name(resource: &[u8], i: u32) -> Vec<u8> {
    let mut name = Vec::with_capacity(resource.len() + 12);
    let tagged = crate::algo::keys::has_hash_tag(resource);
    if !tagged {
        name.push(b'{');
    }
    name.extend_from_slice(resource);
    if !tagged {
        name.push(b'}');
    }
    name.extend_from_slice(format!(":slot:{i}").as_bytes());
    name
}
