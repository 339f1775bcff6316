//! Scoped use: acquire, run the caller's future with renewal, release — also on error and on panic.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use super::renewed::RenewedLock;
use crate::algo::retry::Wait;
use crate::engine::Redlock;
use crate::error::LockError;
use crate::watchdog::entry::Entry;

/// What the work inside [`crate::LockRequest::with`] gets: a way to notice that the lock was lost.
#[derive(Debug, Clone)]
pub struct LockContext {
    lost: CancellationToken,
    entry: Arc<Entry>,
}

impl LockContext {
    /// Completes when the lock is lost (a renewal failed, or its validity ended); select on it around
    /// long steps.
    pub async fn lost(&self) {
        self.entry.lost().await
    }

    /// Whether the lock has been lost — also when its validity ended before the watchdog could run;
    /// check it before each step that needs the lock.
    pub fn is_lost(&self) -> bool {
        self.entry.is_lost()
    }

    /// A token cancelled when the watchdog declares the lock lost, to hand to sub-tasks (they should
    /// also respect [`valid_until`](Self::valid_until)).
    pub fn token(&self) -> CancellationToken {
        self.lost.clone()
    }

    /// The current end of validity (moves forward with every renewal).
    pub fn valid_until(&self) -> tokio::time::Instant {
        self.entry.valid_until()
    }
}

impl Redlock {
    /// Acquires `resource`, runs `work` while the watchdog renews the lock (every third of `ttl`),
    /// then releases it — also when `work` returns an error or panics (the panic is resumed after the
    /// release).
    ///
    /// # Errors
    /// The acquire's error if the lock was never held; [`LockError::Lost`] if it was lost while `work`
    /// ran (the context's signal fired, and `work`'s output is discarded: it may have run partly
    /// unprotected). A failed release is not an error: the work completed under a valid lock, and the
    /// keys expire at their TTL.
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// use std::time::Duration;
    /// let total = redlock
    ///     .with_lock(b"report", Duration::from_secs(2), |ctx| async move {
    ///         let mut total = 0;
    ///         for step in 0..10 {
    ///             if ctx.is_lost() { break; }
    ///             total += step; // ... a unit of protected work ...
    ///         }
    ///         total
    ///     })
    ///     .await?;
    /// # let _ = total; Ok(()) }
    /// ```
    #[deprecated(
        since = "0.2.0",
        note = "use `redlock.lock(resource).ttl(ttl).with(work)`"
    )]
    pub async fn with_lock<F, Fut, T>(
        &self,
        resource: impl AsRef<[u8]>,
        ttl: Duration,
        work: F,
    ) -> Result<T, LockError>
    where
        F: FnOnce(LockContext) -> Fut,
        Fut: Future<Output = T>,
    {
        self.lock(resource)
            .ttl(ttl)
            .wait(Wait::Configured)
            .with(work)
            .await
    }

    /// Acquires a permit like [`acquire_permit`](Self::acquire_permit), runs `work` while the watchdog
    /// renews it (every third of `ttl`), then releases it — also on error or panic, exactly like
    /// [`with_lock`](Self::with_lock).
    ///
    /// # Errors
    /// The acquire's error; [`LockError::Lost`] if the permit was lost while `work` ran.
    #[deprecated(
        since = "0.2.0",
        note = "use `redlock.lock(resource).permits(k).ttl(ttl).with(work)`"
    )]
    pub async fn with_permit<F, Fut, T>(
        &self,
        resource: impl AsRef<[u8]>,
        permits: u32,
        ttl: Duration,
        work: F,
    ) -> Result<T, LockError>
    where
        F: FnOnce(LockContext) -> Fut,
        Fut: Future<Output = T>,
    {
        self.lock(resource)
            .permits(permits)
            .ttl(ttl)
            .wait(Wait::Configured)
            .with(work)
            .await
    }
}

/// Runs `work` under the renewed `lock`, then releases it — also on error or panic (resumed after the
/// release). Shared by every scoped form (`LockRequest::with`, `RenewedRequest::with`).
pub(crate) async fn run_scoped<F, Fut, T>(lock: RenewedLock, work: F) -> Result<T, LockError>
where
    F: FnOnce(LockContext) -> Fut,
    Fut: Future<Output = T>,
{
    {
        let ctx = LockContext {
            lost: lock.lost_token(),
            entry: lock.entry(),
        };
        let outcome = AssertUnwindSafe(work(ctx)).catch_unwind().await;
        let lost = lock.is_lost();
        let _ = lock.release().await;
        match outcome {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(_) if lost => Err(LockError::Lost),
            Ok(value) => Ok(value),
        }
    }
}
