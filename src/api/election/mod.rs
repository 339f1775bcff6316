//! Leader election over the lock nodes: [`Election`] (`redlock.election(name)`), whose
//! [`campaign`](Election::campaign) waits until elected and gives a [`Leadership`]; whoever
//! wants to know the leader asks [`leader`](Election::leader) or follows
//! [`observe`](Election::observe). etcd's `Campaign` / `Proclaim` / `Resign` / `Leader` /
//! `Observe`, on Redlock.
//!
//! # What it is made of
//! Leadership of the election NAME is the fenced lock on NAME (`crate::kinds::fenced`), renewed
//! by the watchdog, plus a record beside it (`prefix{NAME}:leader`, see `scripts`) that publishes
//! the leader's value, term and revision, written owner-checked on a majority. So:
//! - **At most one valid leadership at a time**: the lock's mutual exclusion, under the lock's
//!   assumptions (nodes that do not lose keys — the quarantine covers restarts without
//!   persistence —, clocks that advance at about the same rate — the clock guard covers jumps
//!   it sees).
//! - **Terms strictly increase**: a term is the lock's fencing token, committed on a majority;
//!   the argument is the fenced kind's. A leader that paused past its validity still believes
//!   its old term: a store that checks terms refuses its writes (`crate::FencedStore`).
//! - **[`Election::leader`] shows a leader only when a majority of nodes hold its lock and its
//!   record, live**; two leaders cannot both have a majority (majorities intersect, and a lock
//!   key is set only where none is), and the term names the holder without the lock value
//!   leaving the nodes. A leader whose record is not yet written on a majority (just elected), or
//!   whose keys expired, is not shown.
//! - **[`Election::observe`] reports leaders in `(term, revision)` order**, without polling (see
//!   `observe`).
//!
//! Files: this one ([`Election`]); `campaign` (the request), `leadership` (what a won campaign
//! holds: proclaim, resign, lost), `leader` (the read round and [`Leader`]), `observe` (the
//! stream), `keys` (the keys and the input bounds), `scripts`.

pub(crate) mod campaign;
mod keys;
pub(crate) mod leader;
pub(crate) mod leadership;
pub(crate) mod observe;
mod scripts;

use std::time::Duration;

use bytes::Bytes;

use crate::api::renewed::RenewPolicy;
use crate::api::request::DEFAULT_TTL;
use crate::engine::Redlock;
use crate::error::LockError;
use campaign::Campaign;
use keys::ElectionKeys;
use leader::Leader;
use observe::Observe;

/// An election among the processes that share these nodes: built by [`Redlock::election`].
/// Cheap to clone; holds nothing on the nodes by itself.
///
/// ```no_run
/// # async fn run(redlock: redlock_engine::Redlock) -> Result<(), redlock_engine::LockError> {
/// let election = redlock.election("scheduler");
/// // Waits until elected; renewed while held.
/// let leadership = election.campaign("replica-a").await?;
/// let term = leadership.term(); // carry it in every write the leader makes
/// tokio::select! {
///     why = leadership.lost() => eprintln!("no longer the leader: {why}"),
///     _ = tokio::time::sleep(std::time::Duration::from_secs(5)) => leadership.resign().await?,
/// }
/// // Anyone: who leads now (a majority's view), and every change from now on.
/// if let Some(leader) = election.leader().await? {
///     println!("{} leads in term {}", String::from_utf8_lossy(&leader.value), leader.term);
/// }
/// let mut changes = election.observe()?;
/// while let Some(leader) = changes.next().await {
///     println!("now {} (term {})", String::from_utf8_lossy(&leader.value), leader.term);
/// #   break;
/// }
/// # let _ = term; Ok(()) }
/// ```
#[must_use = "an election does nothing until asked to campaign, read or observe"]
#[derive(Debug, Clone)]
pub struct Election {
    engine: Redlock,
    name: Bytes,
    ttl: Duration,
    policy: RenewPolicy,
}

impl Redlock {
    /// The election `name` (a resource name's bounds: not empty, at most
    /// `Config::max_resource_len` bytes). Leadership is the fenced lock on `name`, so `name` is
    /// what `inspect` and the `redlock` command show it under; do not lock `name` as a resource of
    /// its own.
    pub fn election(&self, name: impl AsRef<[u8]>) -> Election {
        Election {
            engine: self.clone(),
            name: Bytes::copy_from_slice(name.as_ref()),
            ttl: DEFAULT_TTL,
            policy: RenewPolicy::default(),
        }
    }
}

impl Election {
    /// How long a leadership lives without renewal: a leader that dies without resigning is
    /// replaced this long after its last renewal at most (plus a retry pause). Whole
    /// milliseconds, at most `Config::max_ttl`. Default: [`DEFAULT_TTL`] (30 s).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How leaderships renew (see [`RenewPolicy`]). Default: every third of the TTL.
    pub fn renewal(mut self, policy: RenewPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The election's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// A campaign to lead, publishing `value` (an address, a replica's name: 1 byte to 64 KiB, no
    /// NUL) once elected: awaited, it waits as a lock request does (until elected by default;
    /// `.once()`, `.wait_up_to(d)`), then gives a [`crate::Leadership`].
    ///
    /// # Errors (when awaited)
    /// [`LockError::InvalidInput`] for a bad name or value, [`LockError::InvalidConfig`] on fewer
    /// than 3 nodes: nothing is sent. Then as a fenced lock request: busy
    /// ([`LockError::is_busy`]) after `.once()` while another leader holds it,
    /// [`LockError::QuorumNotReached`] on an outage; and as
    /// [`proclaim`](crate::Leadership::proclaim) if the value could not be published (the
    /// leadership is then released).
    pub fn campaign(&self, value: impl AsRef<[u8]>) -> Campaign<'_> {
        Campaign::new(
            &self.engine,
            &self.name,
            self.ttl,
            self.policy.clone(),
            Bytes::copy_from_slice(value.as_ref()),
        )
    }

    /// The leader now, as a majority of nodes shows it (see [`Leader`]); `None` when no leader is
    /// shown on a majority (none elected, its keys expired, or just elected and not yet
    /// published). One read round; changes nothing.
    ///
    /// # Errors
    /// [`LockError::InvalidInput`] for a bad name or a TTL below 1 ms;
    /// [`LockError::QuorumNotReached`] when too few nodes answered to tell; [`LockError::Closed`]
    /// after a shutdown.
    pub async fn leader(&self) -> Result<Option<Leader>, LockError> {
        let core = self.engine.core();
        let keys = ElectionKeys::of(core, &self.name)?;
        leader::read(core, &keys, self.read_ttl()?).await
    }

    /// Every leader change from now on, in term order (see [`Observe`]): the current leader first
    /// (if any), then each new leader or proclaimed value.
    ///
    /// # Errors
    /// [`LockError::InvalidInput`] for a bad name or a TTL below 1 ms; [`LockError::Closed`] after a
    /// shutdown.
    pub fn observe(&self) -> Result<Observe, LockError> {
        let keys = ElectionKeys::of(self.engine.core(), &self.name)?;
        let ttl = self.read_ttl()?;
        Ok(observe::observe(self.engine.clone(), keys, ttl))
    }

    /// The TTL a reader fits its rounds to: the election's, within `max_ttl` (a reader takes
    /// nothing, so an election built with the default TTL reads on an engine with a lower cap).
    fn read_ttl(&self) -> Result<Duration, LockError> {
        let core = self.engine.core();
        core.check_ttl(self.ttl.min(core.settings().max_ttl))
    }
}
