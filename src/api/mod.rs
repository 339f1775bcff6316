//! How callers take and hold locks, over the kinds (`crate::kinds`):
//!
//! - `open`: `Redlock::new`, which hands the engine the list of kinds.
//! - `request`: `Redlock::lock` / `lock_many` → [`crate::LockRequest`], [`crate::RenewedRequest`]:
//!   the one way in, for every kind (how long to wait, which kind, renewed or scoped).
//! - `guard`: [`crate::LockGuard`], a held lock released on drop, even without a runtime.
//! - `renewed`: locks the watchdog keeps alive ([`crate::RenewedLock`], [`crate::RenewPolicy`]).
//! - `scoped`: acquire, run, release ([`crate::LockContext`]), for every kind.
//! - `owner`: reentrant holds scoped to an owner ([`crate::LockOwner`]).
//! - `election/`: leader election over a renewed fenced lock ([`crate::Election`],
//!   [`crate::Leadership`]): campaign, proclaim, resign, the leader and its changes.
//! - `slots`: the slot semaphore, one of K exclusive locks on a majority: not a kind of its own,
//!   a way of taking exclusive locks.

/// The wait shorthands of a request with a `wait(Wait)` method (a lock request, a campaign):
/// `once`, `wait_up_to` and `wait_forever`, each with its own doc line. Written once, so every way
/// in waits by the same words.
macro_rules! wait_shorthands {
    (once: $once:literal, up_to: $up_to:literal, forever: $forever:literal $(,)?) => {
        #[doc = $once]
        pub fn once(self) -> Self {
            self.wait(Wait::Once)
        }

        #[doc = $up_to]
        pub fn wait_up_to(self, limit: Duration) -> Self {
            self.wait(Wait::UpTo(limit))
        }

        #[doc = $forever]
        pub fn wait_forever(self) -> Self {
            self.wait(Wait::Forever)
        }
    };
}

pub(crate) mod election;
pub(crate) mod guard;
mod open;
pub(crate) mod owner;
pub(crate) mod renewed;
pub(crate) mod request;
pub(crate) mod scoped;
pub(crate) mod slots;
