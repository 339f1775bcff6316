//! [`LockRequest`]: one shape for taking every kind of lock — `redlock.lock(resource)`, then what
//! kind, for how long, how long to wait, and `.await`. The per-kind methods (`acquire`,
//! `acquire_read`, ...) are shortcuts for a request with the configured wait.
//!
//! A request is a value: nothing is sent until it is awaited. Dropping the future while it waits is
//! safe: keys an attempt may have set are released in the background, a writer's intent and a fair
//! waiter's place are withdrawn.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::Duration;

use super::guard::LockGuard;
use super::renewed::{RenewPolicy, RenewedLock};
use super::scoped::{run_scoped, LockContext};
use crate::algo::retry::Wait;
use crate::engine::Redlock;
use crate::error::LockError;
use crate::kinds::exclusive::exclusive;
use crate::kinds::fair::wait::FairWait;
use crate::kinds::fair::FAIR;
use crate::kinds::rwlock::write_kind;
use crate::lock::Lock;
use crate::protocol::spec::Kind;

/// The TTL of a request that does not set one: 30 s, renewed or not.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30);

/// Which kind of lock a request takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Exclusive,
    Fenced,
    Read,
    Write,
    Fair,
    Permits(u32),
    Slots(u32),
}

/// A lock to take: built by [`Redlock::lock`] or [`Redlock::lock_many`], awaited for a
/// [`LockGuard`] (or, after [`renewed`](Self::renewed), a [`RenewedLock`]).
///
/// Defaults: an exclusive lock, a TTL of [`DEFAULT_TTL`], and [`Wait::UntilAcquired`]: as long as
/// another owner holds the lock (as `tokio::sync::Mutex::lock` waits), but an outage (nodes
/// unreachable for `retry_count` retries in a row) ends in an error, and `acquire_timeout`, when
/// set, bounds the whole call.
///
/// ```no_run
/// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
/// use std::time::Duration;
/// // Wait up to 5 s for the writer's hold on "catalog", valid for 10 s.
/// let guard = redlock
///     .lock("catalog")
///     .write()
///     .ttl(Duration::from_secs(10))
///     .wait_up_to(Duration::from_secs(5))
///     .await?;
/// guard.release().await?;
/// // One attempt at one of three permits.
/// let permit = redlock.lock("exports").permits(3).once().await?;
/// # drop(permit); Ok(()) }
/// ```
#[must_use = "a request does nothing until it is awaited"]
#[derive(Debug, Clone)]
pub struct LockRequest<'a> {
    engine: &'a Redlock,
    resources: Vec<Vec<u8>>,
    shape: Shape,
    ttl: Duration,
    wait: Wait,
}

impl Redlock {
    /// A request for `resource` (any bytes: `"orders:42"`, `b"orders:42"`, a `Vec<u8>`): set its
    /// kind, TTL and wait, then `.await` it for a [`LockGuard`].
    ///
    /// The default wait is [`Wait::UntilAcquired`]: as `tokio::sync::Mutex::lock`, Redisson's
    /// `lock()` and the `redlock acquire` command, it waits as long as another owner holds the
    /// lock; unlike them it gives up on an outage (`Config::retry_count` retries in a row lost to
    /// unreachable or failing nodes) with that error, and at `Config::acquire_timeout` when set.
    /// `.wait_up_to(d)` bounds it by time, `.once()` tries once (a `try_lock`), `.wait_forever()`
    /// also waits out outages.
    pub fn lock(&self, resource: impl AsRef<[u8]>) -> LockRequest<'_> {
        LockRequest::new(self, vec![resource.as_ref().to_vec()])
    }

    /// A request for every resource in `resources` as one lock (all or none, on each node): its
    /// release and extend act on all of them. Exclusive only; at most 16 resources.
    pub fn lock_many<I, R>(&self, resources: I) -> LockRequest<'_>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u8]>,
    {
        let resources = resources.into_iter().map(|r| r.as_ref().to_vec()).collect();
        LockRequest::new(self, resources)
    }
}

impl<'a> LockRequest<'a> {
    fn new(engine: &'a Redlock, resources: Vec<Vec<u8>>) -> Self {
        Self {
            engine,
            resources,
            shape: Shape::Exclusive,
            ttl: DEFAULT_TTL,
            wait: Wait::UntilAcquired,
        }
    }

    /// How long the keys live on the nodes: the lock's validity is this less the round's time and
    /// the clock drift. Whole milliseconds. Default: [`DEFAULT_TTL`].
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How long to wait for the lock (see [`Wait`]).
    pub fn wait(mut self, wait: Wait) -> Self {
        self.wait = wait;
        self
    }

    wait_shorthands! {
        once: "One attempt, no retry ([`Wait::Once`]).",
        up_to: "Retry until acquired or `limit` has passed ([`Wait::UpTo`]).",
        forever: "Retry until acquired ([`Wait::Forever`]); drop the future to give up.",
    }

    /// An exclusive lock with a fencing token ([`Lock::fencing_token`]), larger than every earlier
    /// holder's.
    pub fn fenced(mut self) -> Self {
        self.shape = Shape::Fenced;
        self
    }

    /// A shared (reader) hold of a read-write lock: many readers, no writer.
    pub fn read(mut self) -> Self {
        self.shape = Shape::Read;
        self
    }

    /// The writer's hold of a read-write lock: no reader, no other writer; waiting readers are held
    /// back while it waits.
    pub fn write(mut self) -> Self {
        self.shape = Shape::Write;
        self
    }

    /// An exclusive lock granted in arrival order across processes.
    pub fn fair(mut self) -> Self {
        self.shape = Shape::Fair;
        self
    }

    /// One of `k` permits of a counting semaphore (every caller of the resource must use the same
    /// `k`); it needs `floor(k·N/(k+1)) + 1` nodes.
    pub fn permits(mut self, k: u32) -> Self {
        self.shape = Shape::Permits(k);
        self
    }

    /// One of `k` slots: `k` exclusive locks on a majority each, any one of which is granted.
    pub fn slots(mut self, k: u32) -> Self {
        self.shape = Shape::Slots(k);
        self
    }

    /// Kept alive by the watchdog (see [`RenewPolicy`]) until released or dropped: awaiting gives
    /// a [`RenewedLock`].
    pub fn renewed(self, policy: RenewPolicy) -> RenewedRequest<'a> {
        RenewedRequest {
            request: self,
            policy,
        }
    }

    /// Scoped use: takes the lock renewed ([`RenewPolicy::default`]), runs `work` with a
    /// [`LockContext`] that says when it is lost, then releases it — also when `work` returns an
    /// error or panics (the panic is resumed after the release). Every kind.
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
    /// let total = redlock
    ///     .lock("report")
    ///     .with(|ctx| async move {
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
    ///
    /// # Errors
    /// The acquire's error if the lock was never held; [`LockError::Lost`] if it was lost while
    /// `work` ran (`work`'s output is discarded: it may have run partly unprotected). A failed
    /// release is not an error: the work completed under a valid lock, and the keys expire.
    pub async fn with<F, Fut, T>(self, work: F) -> Result<T, LockError>
    where
        F: FnOnce(LockContext) -> Fut,
        Fut: Future<Output = T>,
    {
        self.renewed(RenewPolicy::default()).with(work).await
    }

    /// Takes the lock as a plain [`Lock`] (no release on drop): what the per-kind shortcuts return.
    pub(crate) async fn take(self) -> Result<Lock, LockError> {
        let Self {
            engine,
            resources,
            shape,
            ttl,
            wait,
        } = self;
        let core = engine.core();
        let one = || match resources.as_slice() {
            [only] => Ok(only.as_slice()),
            _ => Err(LockError::InvalidInput(format!(
                "{shape:?} locks take one resource; lock_many is exclusive only"
            ))),
        };
        match shape {
            Shape::Exclusive if resources.len() != 1 => {
                let list: Vec<&[u8]> = resources.iter().map(Vec::as_slice).collect();
                let target = engine.multi_target(&list)?;
                core.acquire(target, ttl, wait).await
            }
            Shape::Exclusive => {
                core.acquire(core.target(exclusive(), one()?)?, ttl, wait)
                    .await
            }
            Shape::Fenced => engine.fenced(one()?, ttl, wait).await,
            Shape::Read => {
                let target = core.target(engine.read_kind(), one()?)?;
                core.acquire(target, ttl, wait).await
            }
            Shape::Write => {
                core.acquire(core.target(write_kind(), one()?)?, ttl, wait)
                    .await
            }
            Shape::Fair => {
                let target = core.target(Kind::new(&FAIR, 0), one()?)?;
                FairWait { core }.acquire_fair(target, ttl, wait).await
            }
            Shape::Permits(k) => engine.permit(one()?, k, ttl, wait).await,
            Shape::Slots(k) => engine.slot(one()?, k, ttl, wait).await,
        }
    }
}

impl<'a> IntoFuture for LockRequest<'a> {
    type Output = Result<LockGuard, LockError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        let engine = self.engine.clone();
        Box::pin(async move { Ok(LockGuard::new(engine, self.take().await?)) })
    }
}

/// A [`LockRequest`] whose lock the watchdog keeps alive: awaited for a [`RenewedLock`].
#[must_use = "a request does nothing until it is awaited"]
#[derive(Debug, Clone)]
pub struct RenewedRequest<'a> {
    request: LockRequest<'a>,
    policy: RenewPolicy,
}

impl RenewedRequest<'_> {
    /// Scoped use with this renewal policy, as [`LockRequest::with`].
    ///
    /// # Errors
    /// As [`LockRequest::with`].
    pub async fn with<F, Fut, T>(self, work: F) -> Result<T, LockError>
    where
        F: FnOnce(LockContext) -> Fut,
        Fut: Future<Output = T>,
    {
        run_scoped(self.await?, work).await
    }
}

impl<'a> IntoFuture for RenewedRequest<'a> {
    type Output = Result<RenewedLock, LockError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        let Self { request, policy } = self;
        Box::pin(async move {
            let engine = request.engine;
            // Refused before anything is sent: a policy that cannot renew this TTL in time.
            engine.check_policy(&policy, engine.core().check_ttl(request.ttl)?)?;
            let lock = request.take().await?;
            engine.renew(lock, policy)
        })
    }
}
