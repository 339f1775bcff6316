//! [`Campaign`]: running for leader — a request like [`crate::LockRequest`] (how long to wait is
//! per call), awaited for a [`Leadership`].

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;

use super::keys::{check_nodes, check_value, ElectionKeys};
use super::leadership::Leadership;
use crate::algo::retry::Wait;
use crate::api::renewed::RenewPolicy;
use crate::engine::Redlock;
use crate::error::LockError;

/// A campaign for an election's leadership, from [`crate::Election::campaign`]: awaited, it waits
/// until elected ([`Wait::UntilAcquired`] by default, as a lock request: as long as another leader
/// holds it; an outage ends it with that error), then publishes the value on a majority.
///
/// ```no_run
/// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
/// let election = redlock.election("scheduler");
/// // One attempt: Err(busy) while another replica leads.
/// match election.campaign("10.0.0.7:8080").once().await {
///     Ok(leadership) => println!("leader, term {}", leadership.term()),
///     Err(e) if e.is_busy() => println!("a follower for now"),
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
#[must_use = "a campaign does nothing until it is awaited"]
#[derive(Debug, Clone)]
pub struct Campaign<'a> {
    engine: &'a Redlock,
    name: &'a Bytes,
    ttl: Duration,
    policy: RenewPolicy,
    value: Bytes,
    wait: Wait,
}

impl<'a> Campaign<'a> {
    pub(super) fn new(
        engine: &'a Redlock,
        name: &'a Bytes,
        ttl: Duration,
        policy: RenewPolicy,
        value: Bytes,
    ) -> Self {
        Self {
            engine,
            name,
            ttl,
            policy,
            value,
            wait: Wait::UntilAcquired,
        }
    }

    /// How long to wait to be elected (see [`Wait`]).
    pub fn wait(mut self, wait: Wait) -> Self {
        self.wait = wait;
        self
    }

    wait_shorthands! {
        once: "One attempt ([`Wait::Once`]): busy at once while another leader holds it.",
        up_to: "Until elected or `limit` has passed ([`Wait::UpTo`]).",
        forever: "Until elected, through outages too ([`Wait::Forever`]); drop the future to give up.",
    }
}

impl<'a> IntoFuture for Campaign<'a> {
    type Output = Result<Leadership, LockError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        let Self {
            engine,
            name,
            ttl,
            policy,
            value,
            wait,
        } = self;
        Box::pin(async move {
            // Refused before anything is sent.
            check_value(&value)?;
            check_nodes(engine.core())?;
            let keys = ElectionKeys::of(engine.core(), name)?;
            let lock = engine
                .lock(name)
                .fenced()
                .ttl(ttl)
                .wait(wait)
                .renewed(policy)
                .await?;
            Leadership::elect(engine.clone(), name.clone(), keys, lock, value).await
        })
    }
}
