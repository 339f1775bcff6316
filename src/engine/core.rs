//! [`Core`]: what every round of every lock works on — the nodes, the validated settings, admission
//! control, the local queues, the metric handles, the release re-sender and the watchdog's schedule.
//!
//! The attempt loop (`acquire`), release and extend (`release`) and the watchdog's task
//! (`crate::watchdog`) all depend on this one struct and on nothing of each other's: the engine does not
//! own the watchdog's logic, and the watchdog does not call back into the engine.
//!
//! # Before every round
//! A turn from admission control, and a node deadline fitted to the network. The order matters for
//! validity: admission is awaited **before** the round's clock starts, so a round that waited in this
//! process's queue does not count that wait against the node deadline, while validity is still
//! measured from a moment before any of its bytes can reach a node.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::admission::{Admission, Admitted};
use super::fanout::{self, Deadline};
use super::release_retry::ReleaseRetry;
use super::waitq::LocalQueues;
use crate::algo::clock::{JumpLog, JumpMark};
use crate::algo::keys;
use crate::algo::quorum::{Tally, Vote};
use crate::algo::timing::millis;
use crate::algo::value::{EngineTag, LockValue};
use crate::error::LockError;
use crate::lock::Lock;
use crate::observe::Metrics;
use crate::protocol::catalog::Catalog;
use crate::protocol::cmd::{Cmd, Keys, NodeResult};
use crate::protocol::spec::{Kind, Spec, Target};
use crate::settings::Settings;
use crate::transport::subscriber::Notifier;
use crate::transport::NodeClient;
use crate::watchdog::Watchdog;

/// The engine's shared state (one per [`crate::Redlock`] and its clones).
pub(crate) struct Core {
    settings: Settings,
    nodes: Vec<Arc<dyn NodeClient>>,
    /// The renewed locks' schedule; the task that works through it is `crate::watchdog::task`.
    watchdog: Watchdog,
    queues: Arc<LocalQueues<Lock>>,
    /// Release subscribers, started on the first contended wait.
    notifier: OnceLock<Notifier>,
    metrics: Metrics,
    /// Admission control: how many rounds may be on the nodes at once.
    admission: Admission,
    /// Re-sends releases that did not reach a node.
    release_retry: ReleaseRetry,
    /// The nodes' forward clock jumps, for locks to check against (`None`: the clock guard is off).
    pub(super) jumps: Option<Arc<JumpLog>>,
    /// Starts every lock value this engine draws, so inspect can tell its locks on the nodes.
    tag: EngineTag,
    /// Local gates: at most K of this engine's tasks attempt at once on a resource (the kinds that
    /// keep one, like the semaphore, ask for them).
    gates: super::gates::Gates,
    /// Waiters parked between rounds, for a release to name (`super::successors`).
    pub(super) successors: super::parked::Successors,
    /// The kinds of lock the nodes can hold, as the top of the crate lists them.
    catalog: &'static Catalog,
    /// Set by [`crate::Redlock::shutdown`]: no more locks are granted.
    closed: std::sync::atomic::AtomicBool,
    /// Woken when a lock of this engine may have been lost: a shutdown, a check that found one
    /// gone (`super::holds`). Clock jumps have the jump log's own.
    pub(super) lost_news: tokio::sync::Notify,
}

impl Core {
    /// The core over connected `nodes`; starts the release re-sender on the current runtime.
    pub(crate) fn new(
        settings: Settings,
        nodes: Vec<Arc<dyn NodeClient>>,
        tag: EngineTag,
        catalog: &'static Catalog,
    ) -> Arc<Self> {
        let admission = Admission::new(settings.max_in_flight, settings.connect.max_pending);
        let jumps = settings.connect.clock_guard.map(|_| {
            let log = Arc::new(JumpLog::new(nodes.len()));
            for (index, node) in nodes.iter().enumerate() {
                node.report_jumps(log.clone(), index);
            }
            log
        });
        let core = Arc::new(Self {
            jumps,
            tag,
            metrics: Metrics::new(nodes.len(), &tag.hex()),
            settings,
            nodes,
            watchdog: Watchdog::default(),
            queues: Arc::default(),
            notifier: OnceLock::new(),
            admission,
            release_retry: ReleaseRetry::start(),
            gates: Default::default(),
            successors: Default::default(),
            catalog,
            closed: Default::default(),
            lost_news: tokio::sync::Notify::new(),
        });
        // A lock handed to local waiters that all gave up is released, not left to its TTL. Weak: the
        // queues must not keep the engine alive.
        let weak = Arc::downgrade(&core);
        core.queues.on_orphan(Box::new(move |lock: Lock| {
            if let Some(core) = weak.upgrade() {
                core.release_in_background(&lock);
            }
        }));
        core
    }

    pub(crate) fn nodes(&self) -> &[Arc<dyn NodeClient>] {
        &self.nodes
    }

    /// Whether [`crate::Redlock::shutdown`] was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Refuses every later acquire and extend ([`LockError::Closed`]) and ends the waits in this
    /// process's queues and gates (closed, their waiters go on to an attempt that is refused).
    pub(crate) fn close(&self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
        self.queues.close();
        self.gates.close();
        self.lost_news.notify_waiters();
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// This engine's tag (see [`crate::algo::value`]).
    pub(crate) fn tag(&self) -> EngineTag {
        self.tag
    }

    pub(crate) fn gates(&self) -> &super::gates::Gates {
        &self.gates
    }

    /// The kinds of lock and what is derived from their list.
    pub(crate) fn catalog(&self) -> &'static Catalog {
        self.catalog
    }

    /// Where the clock-jump log stands now (0 with the guard off), for extend rounds about to start.
    pub(crate) fn jumps_now(&self) -> u64 {
        self.jumps.as_ref().map_or(0, |log| log.mark())
    }

    /// The clock-jump log and where it stands, for a lock whose acquire round starts now.
    pub(crate) fn jump_mark(&self) -> JumpMark {
        JumpMark(self.jumps.as_ref().map(|log| (log.clone(), log.mark())))
    }

    pub(crate) fn watchdog(&self) -> &Watchdog {
        &self.watchdog
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    pub(crate) fn release_retry(&self) -> &ReleaseRetry {
        &self.release_retry
    }

    pub(crate) fn queues(&self) -> &Arc<LocalQueues<Lock>> {
        &self.queues
    }

    /// The notifier, if any wait has started it.
    pub(crate) fn notifier_if_started(&self) -> Option<&Notifier> {
        self.notifier.get()
    }

    pub(crate) fn notifier(&self) -> &Notifier {
        self.notifier
            .get_or_init(|| Notifier::start(&self.settings.nodes, &self.settings.connect))
    }

    /// Waits for a round slot until `until` (`None`: as long as it takes).
    ///
    /// # Errors
    /// [`LockError::Overloaded`] if `until` passes first; nothing was sent.
    pub(crate) async fn admit(&self, until: Option<Instant>) -> Result<Admitted<'_>, LockError> {
        self.admission.enter(&self.nodes, until).await
    }

    /// The deadline of a round that starts at `start`: the fitted node deadline first, extended for
    /// nodes that are answering, but never past what the TTL allows nor past `limit` (a lock's
    /// current validity, for extends).
    pub(crate) fn round_deadline(
        &self,
        start: Instant,
        ttl: Duration,
        limit: Option<Instant>,
    ) -> Deadline {
        let longest = start + self.settings.timing.longest_round(ttl);
        let last = limit.map_or(longest, |l| l.min(longest));
        Deadline::new(start, self.round_timeout(ttl), last)
    }

    /// The per-node deadline of a round of a lock with this TTL: the configured one, or fitted to the
    /// slowest node's measured round trip (see [`crate::algo::timing::Timing::fitted_node_timeout`]).
    pub(crate) fn round_timeout(&self, ttl: Duration) -> Duration {
        self.settings
            .timing
            .fitted_node_timeout(ttl, self.rtt_bound())
    }

    /// The slowest node's round-trip bound (a cluster node set's: its slowest shard's), `None`
    /// before any was measured.
    pub(crate) fn rtt_bound(&self) -> Option<Duration> {
        self.nodes.iter().filter_map(|n| n.rtt_bound()).max()
    }

    /// One round of `cmd` on every node (see [`fanout::fan_out`]).
    pub(crate) async fn fan_out(
        &self,
        cmd: &Cmd,
        deadline: Deadline,
        read: fn(NodeResult) -> Vote,
    ) -> Tally {
        fanout::fan_out(&self.nodes, cmd, deadline, read).await
    }

    /// What an acquire attempt sends and how its replies vote: the kind's command, or with a holder
    /// label on a kind's labeled form, its labeled acquire (`Spec::acquire_labeled`).
    pub(crate) fn acquire_cmd(
        &self,
        target: &Target,
        value: LockValue,
        ttl: Duration,
    ) -> (Cmd, fn(NodeResult) -> Vote) {
        let spec = target.kind.spec();
        if let (Some(label), Some(acquire)) = (&self.settings.holder_label, spec.acquire_labeled) {
            let max = millis(self.settings.max_ttl);
            let cmd = acquire(&target.keys, value, millis(ttl), max, label);
            return (cmd, spec.vote);
        }
        let cmd = target.kind.acquire_cmd(&target.keys, value, millis(ttl));
        (cmd, target.kind.acquire_vote())
    }

    /// Builds the target of a single-resource lock of `kind`: the resource's key, then one per suffix
    /// of the kind (its fence counter, its reader set, ...).
    /// With a holder label, a kind that has a labeled form takes it (`Spec::labeled`).
    pub(crate) fn target(&self, kind: Kind, resource: &[u8]) -> Result<Target, LockError> {
        let kind = match kind.spec().labeled {
            Some(labeled) if self.settings.holder_label.is_some() => kind.with_spec(labeled),
            _ => kind,
        };
        self.check_scripting(kind.spec())?;
        let key = self.key(resource, b"")?;
        let suffixes = kind.spec().suffixes;
        let keys = if suffixes.is_empty() {
            Keys::One(key)
        } else {
            let mut keys = Vec::with_capacity(1 + suffixes.len());
            keys.push(key);
            for suffix in suffixes {
                keys.push(self.key(resource, suffix.name)?);
            }
            Keys::Many(keys.into())
        };
        Ok(Target { kind, keys })
    }

    /// Validates a resource name and returns its key plus `suffix` (see [`crate::algo::keys`]).
    pub(crate) fn key(&self, resource: &[u8], suffix: &[u8]) -> Result<Bytes, LockError> {
        let s = &self.settings;
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
        let key = keys::key(s.key_format, &s.key_prefix, resource, suffix)?;
        // Plain keys (`KeyFormat::Plain`) carry no tag of ours: on a cluster an extra key of an
        // untagged name lands in another slot, and a script over both would fail on the node —
        // possibly the release. Refused here, before anything is sent.
        let base = &key[..key.len() - suffix.len()];
        if !suffix.is_empty() && self.clustered() && !keys::slot_safe(s.key_format, base) {
            return Err(LockError::InvalidInput(format!(
                "resource {:?}: with plain keys on a Redis Cluster node set, its `{}` key would \
                 land in another hash slot; give the name a hash tag (`{{name}}`) or use \
                 KeyFormat::Tagged",
                String::from_utf8_lossy(resource),
                String::from_utf8_lossy(suffix)
            )));
        }
        Ok(key)
    }

    /// Refuses at once a kind that needs a script where a node's lock user may not run scripts
    /// (its `Profile` without scripting): its acquire, commit or release would fail there, and a lock taken
    /// on other nodes could be one that node cannot release. Named by the node and the kind.
    pub(crate) fn check_scripting(&self, spec: &Spec) -> Result<(), LockError> {
        if spec
            .scripts
            .iter()
            .all(|s| crate::protocol::native::covers(s))
        {
            return Ok(());
        }
        let refusing = self
            .nodes
            .iter()
            .zip(&self.settings.nodes)
            .find(|(node, _)| !node.profile().scripting);
        match refusing {
            Some((_, addr)) => Err(LockError::InvalidConfig(format!(
                "{addr}: the lock user may not run scripts (no +@scripting), and the {} lock needs \
                 them; there only exclusive locks without a holder label work. Grant the user \
                 +@scripting (or +evalsha +script|load), or take an exclusive lock without a \
                 holder label",
                spec.name
            ))),
            None => Ok(()),
        }
    }

    /// Whether any node is a Redis Cluster, where every key of one script must share a hash slot.
    pub(crate) fn clustered(&self) -> bool {
        self.settings
            .nodes
            .iter()
            .any(|n| n.topology == crate::addr::Topology::Cluster)
    }

    /// Whether a lock on `keys` publishes its releases (`Config::notify_releases`): not where the
    /// waiter mark (`key:wait`, derived in the script) would fall in another Cluster hash slot than
    /// its key — plain keys of untagged names on a cluster; their waiters wake on their timers.
    pub(crate) fn notifies(&self, keys: &Keys) -> bool {
        let s = &self.settings;
        s.notify_releases
            && (!self.clustered()
                || keys
                    .as_slice()
                    .iter()
                    .all(|k| keys::slot_safe(s.key_format, k)))
    }

    /// Validates a TTL and returns it in whole milliseconds: PX takes milliseconds, and validity must be
    /// computed from what the nodes got.
    pub(crate) fn check_ttl(&self, ttl: Duration) -> Result<Duration, LockError> {
        let s = &self.settings;
        // Every acquire and extend starts here: after a shutdown they are refused at once.
        if self.is_closed() {
            return Err(LockError::Closed);
        }
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

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("nodes", &self.settings.nodes)
            .field("transport", &self.settings.transport)
            .finish_non_exhaustive()
    }
}
