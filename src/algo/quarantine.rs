//! Crashed-node quarantine: the Redlock design's "delayed restart" rule, enforced by the client.
//!
//! A node restarted without its data has forgotten the keys it granted; if it votes at once, a second
//! client can win a majority that includes it while the first still holds the lock. So a node whose
//! uptime is below the maximum lock lifetime (the largest TTL any lock or extension may have) does not
//! count toward any quorum — acquire, extend, release — until it is old enough; commands are still sent
//! to it, only its answers do not vote. A `run_id` that changed across a reconnect starts the quarantine
//! whatever the uptime says. Each connection learns `run_id` and `uptime_in_seconds` from `INFO server`
//! in its handshake, at connect and after every reconnect.
//!
//! Skipped for a node whose data survives a crash (`appendfsync always`, claimed with `?durable=true`
//! and not refuted by its settings: [`DurableCheck`]), or off altogether: the price of quarantine is
//! availability — when a majority restarts, no lock can be granted for one maximum lifetime.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

/// What `INFO server` says about a node's identity and age, and whether its data survives a crash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerIdentity {
    pub(crate) run_id: String,
    pub(crate) uptime: Duration,
    /// Claimed durable (`?durable=true`) and not refuted by its settings ([`DurableCheck`]): a restart
    /// loses no key, so it votes at once.
    pub(crate) durable: bool,
}

/// What `CONFIG GET appendonly` and `CONFIG GET appendfsync` say about a node claimed durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DurableCheck {
    /// `appendonly yes` and `appendfsync always`: Redis fsyncs the AOF before it sends the replies of
    /// an event-loop iteration, so a granted key is on disk before its holder hears of it.
    Confirmed,
    /// The server would not say (`CONFIG` refused by an ACL, renamed or disabled, as managed services
    /// do): the operator's word stands.
    Unverified(String),
    /// Its settings say otherwise: it is treated like any other node.
    Refuted(String),
}

impl DurableCheck {
    /// Reads the two replies (`Err`: the server refused the command).
    pub(crate) fn of<E: std::fmt::Display>(
        appendonly: Result<Option<String>, E>,
        appendfsync: Result<Option<String>, E>,
    ) -> Self {
        let (appendonly, appendfsync) = match (appendonly, appendfsync) {
            (Ok(Some(a)), Ok(Some(f))) => (a, f),
            (Err(e), _) | (_, Err(e)) => {
                return Self::Unverified(format!("CONFIG GET refused: {e}"))
            }
            _ => return Self::Unverified("CONFIG GET gave no value".into()),
        };
        match (appendonly.as_str(), appendfsync.as_str()) {
            ("yes", "always") => Self::Confirmed,
            ("yes", other) => Self::Refuted(format!(
                "appendfsync is {other}, not always: a crash of the machine can lose granted keys"
            )),
            (other, _) => {
                Self::Refuted(format!("appendonly is {other}: a restart loses every key"))
            }
        }
    }

    /// Whether quarantine may skip the node.
    pub(crate) fn trusted(&self) -> bool {
        !matches!(self, Self::Refuted(_))
    }
}

/// How much longer a node that reports `uptime` must wait before it votes, or `None` if it is old
/// enough: `max - lower_bound(age)`.
///
/// Why `uptime - 1 s` is the bound (and not `uptime`): Redis computes `uptime_in_seconds` as
/// `unixtime - stat_starttime`, two wall-clock instants each truncated to whole seconds. A server
/// started at x.96 s already reports 1 at x+1.01 s, 0.05 s after the start. So the true age at the
/// moment the reply was made lies in `(uptime - 1, uptime + 1)` seconds; only the lower end is safe.
/// Its `unixtime` is a per-event-loop cache, possibly a few ms stale: that makes `uptime` smaller,
/// never larger. The caller adds the result to an `Instant` read *after* the reply arrived, which is
/// later than the moment the server made it, so the quarantine can only end late, never early.
///
/// What this cannot see: `uptime_in_seconds` follows the node's wall clock, so a node whose clock is
/// stepped forward after a restart reports more uptime than it has and leaves quarantine early.
pub(crate) fn young_for(max: Duration, uptime: Duration) -> Option<Duration> {
    let at_least = uptime.saturating_sub(Duration::from_secs(1));
    max.checked_sub(at_least).filter(|left| !left.is_zero())
}

/// One node's quarantine state, updated by its connection.
#[derive(Debug)]
pub(crate) struct Quarantine {
    /// `None`: quarantine is off. Otherwise the maximum lock lifetime.
    max_lifetime: Option<Duration>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The `run_id` last read from each server behind the node: one for a standalone or Sentinel
    /// node (keyed `""`), one per member for a cluster.
    run_ids: HashMap<String, String>,
    until: Option<Instant>,
    /// Servers whose connection dropped and whose new identity is not known yet (transports that
    /// learn it after reconnecting): no vote until it is.
    suspended: HashSet<String>,
    /// The last identity read (whichever server of the set) and when, for operators.
    last: Option<(ServerIdentity, Instant)>,
}

/// What an operator may see of one node's quarantine (read-only; see `Quarantine::view`).
#[derive(Debug, Clone)]
pub(crate) struct QuarantineView {
    /// Quarantine is on for this engine.
    pub(crate) on: bool,
    /// No vote before this instant (`None`: not held back by age or restart).
    pub(crate) until: Option<Instant>,
    /// No vote until an identity is (re-)read: never read, or a server of the set dropped.
    pub(crate) unidentified: bool,
    /// The last identity read and when.
    pub(crate) last: Option<(ServerIdentity, Instant)>,
}

impl Quarantine {
    pub(crate) fn new(max_lifetime: Option<Duration>) -> Self {
        Self {
            max_lifetime,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies what a (re)connect learned about the server.
    pub(crate) fn on_connect(&self, id: &ServerIdentity) {
        self.on_member_connect("", id);
    }

    /// Applies what a (re)connect learned about one server of a node set (a cluster member).
    pub(crate) fn on_member_connect(&self, member: &str, id: &ServerIdentity) {
        let now = Instant::now();
        let mut st = self.state();
        st.last = Some((id.clone(), now));
        let Some(max) = self.max_lifetime else { return };
        // `max` is capped by the configuration (at most a year), so these additions cannot overflow.
        let restarted = st.run_ids.get(member).is_some_and(|old| *old != id.run_id);
        let young_for = young_for(max, id.uptime);
        let until = if id.durable {
            // Its keys come back from its AOF: a restart forgot nothing.
            None
        } else if restarted {
            // A new process behind the same address: whatever its uptime claims, it lost our keys.
            Some(now + max)
        } else {
            young_for.map(|left| now + left)
        };
        if let Some(until) = until {
            st.until = Some(st.until.map_or(until, |u| u.max(until)));
        }
        st.run_ids.insert(member.to_string(), id.run_id.clone());
        st.suspended.remove(member);
    }

    /// Something may have lost keys without a restart we could see (a failover promoted a replica
    /// that had not received the latest writes): no vote for one maximum lifetime from now.
    pub(crate) fn quarantine_now(&self) {
        let Some(max) = self.max_lifetime else { return };
        let until = Instant::now() + max;
        let mut st = self.state();
        st.until = Some(st.until.map_or(until, |u| u.max(until)));
    }

    /// A server joined the node set (a cluster master): one never seen before quarantines the set.
    #[cfg_attr(not(feature = "fred"), allow(dead_code))]
    pub(crate) fn on_member_added(&self, member: &str) {
        let known = self.state().run_ids.contains_key(member);
        if !known {
            self.quarantine_now();
        }
    }

    /// A server left the node set (a cluster member removed): it no longer holds the vote back.
    #[cfg_attr(not(feature = "fred"), allow(dead_code))]
    pub(crate) fn forget_member(&self, member: &str) {
        let mut st = self.state();
        st.suspended.remove(member);
        st.run_ids.remove(member);
    }

    /// The server's `run_id`, once read (standalone and Sentinel nodes; `None` for a cluster).
    pub(crate) fn run_id(&self) -> Option<String> {
        self.state().run_ids.get("").cloned()
    }

    /// One server's connection dropped (`""` for a node of one server): stop voting until its next
    /// identity is known (transports that learn the identity only after reconnecting: fred).
    #[cfg_attr(not(feature = "fred"), allow(dead_code))]
    pub(crate) fn suspend_member(&self, member: &str) {
        if self.max_lifetime.is_some() {
            self.state().suspended.insert(member.to_string());
        }
    }

    /// A read-only copy of the state, for operators (`Redlock::nodes_status`).
    pub(crate) fn view(&self) -> QuarantineView {
        let st = self.state();
        let on = self.max_lifetime.is_some();
        QuarantineView {
            on,
            until: st.until.filter(|until| on && Instant::now() < *until),
            unidentified: on && (st.run_ids.is_empty() || !st.suspended.is_empty()),
            last: st.last.clone(),
        }
    }

    /// Whether this node's answers count toward quorums now.
    pub(crate) fn votes(&self) -> bool {
        if self.max_lifetime.is_none() {
            return true;
        }
        let st = self.state();
        // An identity never read (or not re-read since a drop) is an unknown restart: no vote.
        !st.run_ids.is_empty()
            && st.suspended.is_empty()
            && st.until.is_none_or(|until| Instant::now() >= until)
    }
}

#[cfg(test)]
#[path = "quarantine_tests.rs"]
mod tests;
