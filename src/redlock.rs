//! [`Redlock`]: acquire, release and extend — the algorithm, on top of [`crate::fanout::fan_out`].
//!
//! Every lock kind (exclusive, multi-resource, read, write) goes through the same attempt loop; a
//! [`Kind`] only says which command acquires and which scripts release and extend.

use std::fmt;
use std::pin::pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::acquire::{release_cmd, start};
use crate::admission::Admission;
use crate::config::{Config, Settings};
use crate::error::LockError;
use crate::fanout::{fan_out, release_round, Deadline};
use crate::kind::Kind;
use crate::lock::Lock;
use crate::observe::{Metrics, Op};
use crate::quorum::{Tally, Vote};
use crate::release_retry::ReleaseRetry;
use crate::transport::subscriber::Notifier;
use crate::transport::{self, Args, Cmd, Keys, NodeClient};
use crate::waitq::{LocalHold, LocalQueues};
use crate::watchdog::Watchdog;

/// A Redlock engine over a fixed set of independent Redis masters. Cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct Redlock {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    settings: Settings,
    nodes: Vec<Arc<dyn NodeClient>>,
    watchdog: Watchdog,
    queues: Arc<LocalQueues>,
    /// Release subscribers, started on the first contended wait.
    notifier: OnceLock<Notifier>,
    metrics: Metrics,
    /// Admission control: how many rounds may be on the nodes at once.
    admission: Admission,
    /// Re-sends releases that did not reach a node.
    release_retry: ReleaseRetry,
}

/// What one acquire is for: the kind of lock and its keys (prefix included).
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) kind: Kind,
    pub(crate) keys: Keys,
}

impl Redlock {
    /// A [`crate::Builder`] with the default configuration.
    pub fn builder() -> crate::Builder {
        crate::Builder::new()
    }

    /// Validates `config` and connects to every node concurrently.
    ///
    /// Waits at most `connect_timeout` for the first connections. An unreachable node is not an error
    /// here: it starts disconnected, votes "failed" until it comes back, and reconnects in the background.
    /// Invalid configuration (no nodes, a malformed URL, a duplicate node, a factor out of range) is.
    pub async fn new(config: Config) -> Result<Self, LockError> {
        let settings = config.validate()?;
        let connects = settings
            .nodes
            .iter()
            .map(|addr| transport::connect(settings.transport, addr.clone(), &settings.connect));
        let nodes = futures::future::join_all(connects).await;
        let n = nodes.len();
        // One server behind two names (localhost and 127.0.0.1, say) would vote twice.
        let mut seen = std::collections::HashMap::new();
        for (index, node) in nodes.iter().enumerate() {
            if let Some(run_id) = node.run_id() {
                if let Some(first) = seen.insert(run_id, index) {
                    return Err(LockError::InvalidConfig(format!(
                        "nodes {first} and {index} are the same Redis server (same run_id); \
                         Redlock needs independent nodes"
                    )));
                }
            }
        }
        let admission = Admission::new(settings.max_in_flight, settings.connect.max_pending);
        let engine = Self {
            inner: Arc::new(Inner {
                settings,
                nodes,
                watchdog: Watchdog::default(),
                queues: Arc::default(),
                notifier: OnceLock::new(),
                metrics: Metrics::new(n),
                admission,
                release_retry: ReleaseRetry::start(),
            }),
        };
        // A lock handed to local waiters that all gave up is released, not left to its TTL.
        let weak = engine.downgrade();
        engine.inner.queues.on_orphan(Box::new(move |lock| {
            if let Some(engine) = Redlock::upgrade(&weak) {
                engine.release_in_background(&lock);
            }
        }));
        Ok(engine)
    }

    pub(crate) fn nodes(&self) -> &[Arc<dyn NodeClient>] {
        &self.inner.nodes
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    pub(crate) fn watchdog(&self) -> &Watchdog {
        &self.inner.watchdog
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    pub(crate) fn admission(&self) -> &Admission {
        &self.inner.admission
    }

    pub(crate) fn release_retry(&self) -> &ReleaseRetry {
        &self.inner.release_retry
    }

    pub(crate) fn queues(&self) -> &Arc<LocalQueues> {
        &self.inner.queues
    }

    pub(crate) fn notifier(&self) -> &Notifier {
        self.inner.notifier.get_or_init(|| {
            Notifier::start(&self.inner.settings.nodes, &self.inner.settings.connect)
        })
    }

    /// A handle that does not keep the engine (and its connections) alive: for background tasks.
    pub(crate) fn downgrade(&self) -> std::sync::Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    pub(crate) fn upgrade(weak: &std::sync::Weak<Inner>) -> Option<Self> {
        weak.upgrade().map(|inner| Self { inner })
    }

    /// Number of nodes in the set.
    pub fn node_count(&self) -> usize {
        self.inner.nodes.len()
    }

    /// The smoothed round-trip time to each node (configuration order), as this engine measures it on
    /// its own connections: `None` before the first reply, and for nodes carried by fred. The default
    /// node deadline follows these (see [`Config::node_timeout`]).
    pub fn rtt_estimates(&self) -> Vec<Option<Duration>> {
        self.inner
            .nodes
            .iter()
            .map(|n| n.rtt().and_then(|r| r.smoothed()))
            .collect()
    }

    /// Number of nodes whose connection is up right now.
    pub fn connected_nodes(&self) -> usize {
        self.inner.nodes.iter().filter(|n| n.is_connected()).count()
    }

    /// Acquires `resource` for `ttl`, retrying with a random pause as configured.
    ///
    /// Each attempt sends `SET key value NX PX ttl` to all nodes at once and returns as soon as a majority
    /// is won or lost. A lock is returned only if a majority confirmed **and** the validity left
    /// (`ttl - elapsed - drift`) is at least the configured minimum. A failed attempt releases its key on
    /// every node (without waiting) before the pause.
    ///
    /// `ttl` is used in whole milliseconds (rounded down).
    ///
    /// # Cancellation
    /// Dropping the future mid-attempt is safe: keys the attempt may have set are released in the
    /// background, best effort.
    ///
    /// # Errors
    /// [`LockError::Contended`], [`LockError::QuorumNotReached`] or [`LockError::ValidityExpired`] from
    /// the last attempt once retries are used up; [`LockError::Timeout`] when `acquire_timeout` passes;
    /// [`LockError::InvalidInput`] for an empty or too long resource or a TTL that is zero, below 1 ms, too
    /// large, or not above the node timeout.
    pub async fn acquire(&self, resource: &[u8], ttl: Duration) -> Result<Lock, LockError> {
        let target = self.target(Kind::Exclusive, resource)?;
        self.acquire_target(target, ttl, true).await
    }

    /// One acquire attempt, no retries. Same guarantees and errors as [`acquire`](Self::acquire).
    pub async fn try_acquire(&self, resource: &[u8], ttl: Duration) -> Result<Lock, LockError> {
        let target = self.target(Kind::Exclusive, resource)?;
        self.acquire_target(target, ttl, false).await
    }

    /// Releases `lock` on every node with its owner-checked release script.
    ///
    /// # Errors
    /// [`LockError::NotOwner`] if another owner's value sits at the key (our lock had expired and was
    /// taken); [`LockError::AlreadyExpired`] if the keys were already gone; [`LockError::QuorumNotReached`]
    /// if too many nodes failed to answer (copies that did not land are re-sent in the background until
    /// the keys' TTL); [`LockError::Overloaded`] if the round could not even start within one TTL (only
    /// with a majority of nodes frozen and their queues full; the release is then sent in the
    /// background).
    ///
    /// With the local queue on and another task of this process waiting for the resource, the lock may
    /// instead be handed to that task (see [`Config::max_local_handoffs`]); this then returns `Ok` without
    /// a round trip.
    pub async fn release(&self, mut lock: Lock) -> Result<(), LockError> {
        let s = &self.inner.settings;
        let mut local = lock.local.take();
        // Hand off only with validity to spare: the receiver extends if it needs more.
        let spare = s
            .timing
            .min_validity(lock.ttl)
            .max(s.timing.node_timeout(lock.ttl));
        if local.as_ref().is_some_and(LocalHold::has_waiters)
            && lock.kind.hands_off()
            && lock.handoffs < s.max_local_handoffs
            && lock.remaining() >= spare
        {
            if let Some(hold) = local.take() {
                hold.hand_off(lock);
                self.leave(hold);
                return Ok(());
            }
        }
        // A release waits its turn (each admitted round ends by its deadline, so the line moves), up to
        // one TTL: by then the keys have expired anyway. Only a majority of nodes frozen with full
        // queues gets there; the release is then handed to the background re-sender, not dropped.
        let _slot = match self.admit(Some(Instant::now() + lock.ttl)).await {
            Ok(slot) => slot,
            Err(overloaded) => {
                self.release_in_background(&lock);
                return Err(overloaded);
            }
        };
        let timeout = self.round_timeout(lock.ttl);
        let started = Instant::now();
        let lock_held = lock.held;
        let cmd = release_cmd(lock.kind.release_script(s.notify_releases), &lock);
        // Past one TTL the keys are gone anyway; until then a node that is answering is waited for.
        let deadline = Deadline::new(started, timeout, started + lock.ttl);
        let mut round = pin!(release_round(self.nodes(), &cmd, deadline));
        // The first poll queues the release on every connection; a local waiter let in after that is
        // written behind it, so its SET finds the key gone — no need to wait for our replies first.
        let early = start(round.as_mut()).await;
        let remote_flag = local.as_ref().map(LocalHold::remote_waiting_flag);
        let yield_to_remote = local.as_ref().is_some_and(LocalHold::remote_waiting);
        if !yield_to_remote {
            if let Some(local) = local.take() {
                self.leave(local);
            }
        }
        let tally = match early {
            Some(tally) => tally,
            None => round.await,
        };
        self.inner
            .metrics
            .round(Op::Release, &tally, started.elapsed());
        // Nodes the round could not confirm get the release again in the background; the keys
        // expire by themselves at most one TTL from now (the last grant or extend was before this).
        if !tally.failures.is_empty() {
            let keys_expire = Instant::now() + lock.ttl;
            for (index, cause) in &tally.failures {
                if let Some(node) = self.nodes().get(*index) {
                    self.release_retry().resend(node, &cmd, cause, keys_expire);
                }
            }
        }
        if let Some(flag) = remote_flag {
            flag.store(tally.waiters > 0, std::sync::atomic::Ordering::Release);
        }
        if let Some(local) = local {
            // A waiter elsewhere was told of this release; local waiters, already in line, would beat
            // it every time. Give its SET a moment to arrive first (cohort fairness across processes).
            let grace = (timeout / 20).clamp(Duration::from_millis(1), Duration::from_millis(5));
            tokio::time::sleep(grace).await;
            self.leave(local);
        }
        // Released once no majority can hold our value any more: nodes that confirmed the delete plus
        // nodes where it was already gone (or never landed) make a majority, and at least one delete
        // happened (otherwise the lock had simply expired).
        if tally.won() || (tally.yes > 0 && tally.yes + tally.gone >= tally.quorum()) {
            Ok(())
        } else {
            Err(owner_error(tally, lock_held))
        }
    }

    /// Leaves the local queue; a handed-off lock nobody will take is released.
    fn leave(&self, hold: LocalHold) {
        if let Some(orphan) = hold.leave() {
            self.release_in_background(&orphan);
        }
    }

    /// Extends `lock` to `ttl` from now, on every node, with its owner-checked extend script.
    ///
    /// The extension counts only if a majority confirmed before the lock's current validity ended. On
    /// success `valid_until` becomes `start + ttl - drift`, measured from this call's start. On failure it
    /// can only move earlier (a partial extend with a shorter TTL may have shortened some keys).
    ///
    /// # Errors
    /// [`LockError::AlreadyExpired`] if the validity had already ended (nothing is sent) or the keys were
    /// gone; [`LockError::NotOwner`] if another owner holds the resource; [`LockError::QuorumNotReached`];
    /// [`LockError::ValidityExpired`] if the confirmations came too late to leave any validity;
    /// [`LockError::InvalidInput`] for a bad `ttl`.
    pub async fn extend(&self, lock: &mut Lock, ttl: Duration) -> Result<(), LockError> {
        let ttl = self.check_ttl(ttl)?;
        if Instant::now() >= lock.valid_until {
            return Err(LockError::AlreadyExpired);
        }
        // Waiting past the validity would be pointless: nothing could extend the lock after it.
        let _slot = self.admit(Some(lock.valid_until)).await?;
        let start = Instant::now();
        if start >= lock.valid_until {
            return Err(LockError::AlreadyExpired);
        }
        let cmd = Cmd::Script {
            script: lock.kind.extend_script(),
            keys: lock.keys.clone(),
            value: lock.value,
            args: Args::of(&[millis(ttl)]),
        };
        // Replies after the current validity ended prove nothing: someone else may hold it by then.
        let deadline = self.round_deadline(start, ttl, Some(lock.valid_until));
        let tally = fan_out(self.nodes(), &cmd, deadline, Vote::of_script).await;
        self.metrics().round(Op::Extend, &tally, start.elapsed());
        self.settle_extend(lock, ttl, start, tally)
    }

    /// Applies an extend round's outcome to `lock` (shared with the watchdog's batched renewals).
    pub(crate) fn settle_extend(
        &self,
        lock: &mut Lock,
        ttl: Duration,
        start: Instant,
        tally: Tally,
    ) -> Result<(), LockError> {
        let timing = &self.inner.settings.timing;
        let extended_until = start + ttl.saturating_sub(timing.drift(ttl));
        match timing.validity(ttl, start.elapsed()) {
            Some(_) if tally.won() => {
                lock.valid_until = extended_until;
                lock.ttl = ttl;
                lock.held = tally.yes_mask;
                if let Some(local) = &lock.local {
                    local.set_valid_until(extended_until);
                }
                Ok(())
            }
            _ => {
                lock.valid_until = lock.valid_until.min(extended_until);
                if let Some(local) = &lock.local {
                    local.set_valid_until(lock.valid_until);
                }
                if tally.won() {
                    let min = timing.min_validity(ttl);
                    Err(LockError::ValidityExpired {
                        left: Duration::ZERO,
                        min,
                    })
                } else {
                    Err(owner_error(tally, lock.held))
                }
            }
        }
    }

    /// Builds the target of a single-resource lock of `kind`; read-write locks get their extra keys.
    pub(crate) fn target(&self, kind: Kind, resource: &[u8]) -> Result<Target, LockError> {
        let key = self.key(resource, b"")?;
        let keys = match kind {
            Kind::Fenced => {
                Keys::Many(vec![key, self.key(resource, crate::fence::FENCE_SUFFIX)?].into())
            }
            Kind::Read { .. } | Kind::Write { .. } => Keys::Many(
                vec![
                    key,
                    self.key(resource, crate::rwlock::READERS_SUFFIX)?,
                    self.key(resource, crate::rwlock::INTENT_SUFFIX)?,
                ]
                .into(),
            ),
            _ => Keys::One(key),
        };
        Ok(Target { kind, keys })
    }

    /// Validates a resource name and returns its key plus `suffix` (see [`crate::keys`]).
    pub(crate) fn key(&self, resource: &[u8], suffix: &[u8]) -> Result<Bytes, LockError> {
        let s = &self.inner.settings;
        if resource.is_empty() {
            return Err(LockError::InvalidInput("resource name is empty".into()));
        }
        if resource.len() > s.max_resource_len {
            return Err(LockError::InvalidInput(format!(
                "resource name is {} bytes, the limit is {}",
                resource.len(),
                s.max_resource_len
            )));
        }
        crate::keys::key(&s.key_prefix, resource, suffix)
    }

    /// Validates a TTL and returns it in whole milliseconds: PX takes milliseconds, and validity must be
    /// computed from what the nodes got.
    pub(crate) fn check_ttl(&self, ttl: Duration) -> Result<Duration, LockError> {
        let s = &self.inner.settings;
        let whole = Duration::from_millis(millis(ttl));
        if whole.is_zero() {
            return Err(LockError::InvalidInput(format!(
                "ttl {ttl:?} is below 1 ms"
            )));
        }
        if whole > s.max_ttl {
            return Err(LockError::InvalidInput(format!(
                "ttl {ttl:?} is above max_ttl {:?}",
                s.max_ttl
            )));
        }
        let node_timeout = s.timing.node_timeout(whole);
        if node_timeout >= whole {
            return Err(LockError::InvalidInput(format!(
                "ttl {ttl:?} is not above the node timeout {node_timeout:?}"
            )));
        }
        Ok(whole)
    }
}

impl fmt::Debug for Redlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redlock")
            .field("nodes", &self.inner.settings.nodes)
            .field("transport", &self.inner.settings.transport)
            .finish_non_exhaustive()
    }
}

/// Why a release or extend round was lost.
///
/// Only the nodes that confirmed the lock (`held`, a bit per node) can tell: a node that never had our
/// key answers "gone" (or shows a contender's key) whatever happened to the lock.
fn owner_error(tally: Tally, held: u16) -> LockError {
    let failed_held = tally
        .failures
        .iter()
        .any(|(index, _)| held & 1u16.checked_shl(*index as u32).unwrap_or(0) != 0);
    if tally.taken_mask & held != 0 {
        LockError::NotOwner
    } else if tally.gone_mask & held != 0 && !failed_held {
        LockError::AlreadyExpired
    } else {
        LockError::QuorumNotReached {
            ok: tally.yes,
            needed: tally.quorum(),
            failures: tally.failures,
        }
    }
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
