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

/// Reads `run_id` and `uptime_in_seconds` out of an `INFO server` reply.
pub(crate) fn parse_info(text: &[u8]) -> Option<ServerIdentity> {
    let text = std::str::from_utf8(text).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.trim_end().strip_prefix(name)?.strip_prefix(':'))
    };
    // Negative when the node's wall clock was stepped back past its start time: its age is then
    // unknown, so it counts as just started (the longest quarantine) rather than failing the
    // handshake, which would keep the node out for as long as its clock stays behind.
    let uptime: i64 = field("uptime_in_seconds")?.parse().ok()?;
    Some(ServerIdentity {
        run_id: field("run_id")?.to_string(),
        uptime: Duration::from_secs(uptime.max(0) as u64),
        durable: false,
    })
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
        let Some(max) = self.max_lifetime else { return };
        let now = Instant::now();
        let mut st = self.state();
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
    #[cfg_attr(not(feature = "fred"), allow(dead_code))]
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
mod tests {
    use super::*;

    fn id(run_id: &str, uptime_s: u64) -> ServerIdentity {
        ServerIdentity {
            run_id: run_id.into(),
            uptime: Duration::from_secs(uptime_s),
            durable: false,
        }
    }

    #[test]
    fn parses_info_server() {
        let info = b"# Server\r\nredis_version:7.0.15\r\nrun_id:abc123\r\ntcp_port:7001\r\nuptime_in_seconds:42\r\n";
        assert_eq!(parse_info(info), Some(id("abc123", 42)));
        assert_eq!(parse_info(b"# Server\r\nredis_version:7\r\n"), None);
        let stepped_back = b"run_id:abc123\r\nuptime_in_seconds:-3599\r\n";
        assert_eq!(
            parse_info(stepped_back),
            Some(id("abc123", 0)),
            "age unknown: youngest"
        );
        assert_eq!(parse_info(b"run_id:a\r\nuptime_in_seconds:x\r\n"), None);
    }

    #[test]
    fn reported_uptime_counts_one_second_less() {
        let max = Duration::from_secs(60);
        let s = Duration::from_secs;
        // A server started at x.99 s reports 1 at x+1.00 s: its real age may be ~0.
        assert_eq!(young_for(max, s(0)), Some(max));
        assert_eq!(
            young_for(max, s(1)),
            Some(max),
            "1 s reported: age may be ~0"
        );
        assert_eq!(young_for(max, s(59)), Some(s(2)), "max - 1");
        assert_eq!(young_for(max, s(60)), Some(s(1)), "max: age may be 59.01 s");
        assert_eq!(young_for(max, s(61)), None, "max + 1: age > max");
        assert_eq!(young_for(max, s(3600)), None);
        assert_eq!(young_for(Duration::ZERO, s(0)), None);
    }

    #[test]
    fn a_node_reporting_exactly_max_ttl_still_waits() {
        let q = Quarantine::new(Some(Duration::from_secs(60)));
        q.on_connect(&id("a", 60));
        assert!(!q.votes(), "60 s reported may be 59.01 s");
        let q = Quarantine::new(Some(Duration::from_secs(60)));
        q.on_connect(&id("a", 61));
        assert!(q.votes());
    }

    #[test]
    fn young_nodes_wait_until_old_enough() {
        let q = Quarantine::new(Some(Duration::from_secs(60)));
        q.on_connect(&id("a", 10));
        assert!(!q.votes(), "10 s old, max lifetime 60 s");
        let old = Quarantine::new(Some(Duration::from_secs(60)));
        old.on_connect(&id("a", 3600));
        assert!(old.votes());
    }

    #[test]
    fn a_changed_run_id_quarantines_whatever_the_uptime() {
        let q = Quarantine::new(Some(Duration::from_secs(60)));
        q.on_connect(&id("a", 3600));
        assert!(q.votes());
        q.on_connect(&id("b", 3600)); // odd uptime reporting, but a different process
        assert!(!q.votes());
    }

    #[test]
    fn unknown_or_suspended_identity_does_not_vote() {
        let q = Quarantine::new(Some(Duration::from_secs(60)));
        assert!(!q.votes(), "never identified");
        q.on_connect(&id("a", 3600));
        assert!(q.votes());
        q.suspend_member("");
        assert!(!q.votes(), "dropped, not yet re-identified");
        q.on_connect(&id("a", 3601));
        assert!(q.votes());
    }

    #[test]
    fn a_cluster_votes_only_when_every_member_is_known_and_old() {
        let q = Quarantine::new(Some(Duration::from_secs(60)));
        q.on_member_connect("m1:7000", &id("a", 3600));
        q.on_member_connect("m2:7001", &id("b", 3600));
        assert!(
            q.votes(),
            "different run_ids on different members are no restart"
        );
        assert_eq!(q.run_id(), None, "no single identity for a cluster");
        q.suspend_member("m2:7001");
        assert!(!q.votes());
        q.on_member_connect("m2:7001", &id("b2", 3600));
        assert!(!q.votes(), "m2 restarted");
        let failover = Quarantine::new(Some(Duration::from_secs(60)));
        failover.on_member_connect("m1:7000", &id("a", 3600));
        failover.suspend_member("m1:7000");
        failover.forget_member("m1:7000");
        failover.on_member_connect("r1:7003", &id("c", 3600));
        assert!(
            failover.votes(),
            "the removed member no longer holds the vote"
        );
        failover.quarantine_now();
        assert!(!failover.votes(), "a topology change quarantines");
    }

    #[test]
    fn a_durable_node_votes_at_once_even_after_a_restart() {
        let q = Quarantine::new(Some(Duration::from_secs(60)));
        let durable = |run_id: &str| ServerIdentity {
            durable: true,
            ..id(run_id, 0)
        };
        q.on_connect(&durable("a"));
        assert!(q.votes(), "young, but its data survives");
        q.on_connect(&durable("b"));
        assert!(q.votes(), "restarted, and its keys came back");
        q.on_connect(&id("c", 0));
        assert!(!q.votes(), "no longer durable: an ordinary restart");
    }

    #[test]
    fn the_durable_claim_is_checked_against_the_settings() {
        let v = |s: &str| Ok::<_, String>(Some(s.to_string()));
        assert_eq!(
            DurableCheck::of(v("yes"), v("always")),
            DurableCheck::Confirmed
        );
        assert!(!DurableCheck::of(v("yes"), v("everysec")).trusted());
        assert!(!DurableCheck::of(v("no"), v("always")).trusted());
        let refused = DurableCheck::of(Err("NOPERM".to_string()), v("always"));
        assert!(matches!(refused, DurableCheck::Unverified(_)) && refused.trusted());
        assert!(DurableCheck::of(Ok::<_, String>(None), v("always")).trusted());
    }

    #[test]
    fn off_means_always_voting() {
        let q = Quarantine::new(None);
        q.on_connect(&id("a", 0));
        q.on_connect(&id("b", 0));
        assert!(q.votes());
    }
}
