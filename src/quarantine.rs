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
//! Off for nodes whose data survives a crash (`appendfsync always`): the price of quarantine is
//! availability — when a majority restarts, no lock can be granted for one maximum lifetime.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// What `INFO server` says about a node's identity and age.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerIdentity {
    pub(crate) run_id: String,
    pub(crate) uptime: Duration,
}

/// Reads `run_id` and `uptime_in_seconds` out of an `INFO server` reply.
pub(crate) fn parse_info(text: &[u8]) -> Option<ServerIdentity> {
    let text = std::str::from_utf8(text).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.trim_end().strip_prefix(name)?.strip_prefix(':'))
    };
    Some(ServerIdentity {
        run_id: field("run_id")?.to_string(),
        uptime: Duration::from_secs(field("uptime_in_seconds")?.parse().ok()?),
    })
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
    run_id: Option<String>,
    until: Option<Instant>,
    /// The connection dropped and the new one's identity is not known yet (transports that learn it
    /// after reconnecting): no vote until it is.
    suspended: bool,
}

impl Quarantine {
    pub(crate) fn new(max_lifetime: Option<Duration>) -> Self {
        Self {
            max_lifetime,
            state: Mutex::default(),
        }
    }

    /// Applies what a (re)connect learned about the server.
    pub(crate) fn on_connect(&self, id: &ServerIdentity) {
        let Some(max) = self.max_lifetime else { return };
        let now = Instant::now();
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        // `max` is capped by the configuration (at most a year), so these additions cannot overflow.
        let restarted = st.run_id.as_deref().is_some_and(|old| old != id.run_id);
        let young_for = max.checked_sub(id.uptime).filter(|left| !left.is_zero());
        let until = if restarted {
            // A new process behind the same address: whatever its uptime claims, it lost our keys.
            Some(now + max)
        } else {
            young_for.map(|left| now + left)
        };
        if let Some(until) = until {
            st.until = Some(st.until.map_or(until, |u| u.max(until)));
        }
        st.run_id = Some(id.run_id.clone());
        st.suspended = false;
    }

    /// The server's `run_id`, once read.
    pub(crate) fn run_id(&self) -> Option<String> {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .run_id
            .clone()
    }

    /// The connection dropped: stop voting until the next identity is known (transports that learn the
    /// identity only after reconnecting: fred).
    #[cfg_attr(not(feature = "fred"), allow(dead_code))]
    pub(crate) fn suspend(&self) {
        if self.max_lifetime.is_some() {
            self.state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .suspended = true;
        }
    }

    /// Whether this node's answers count toward quorums now.
    pub(crate) fn votes(&self) -> bool {
        if self.max_lifetime.is_none() {
            return true;
        }
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        // An identity never read (or not re-read since a drop) is an unknown restart: no vote.
        st.run_id.is_some() && !st.suspended && st.until.is_none_or(|until| Instant::now() >= until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(run_id: &str, uptime_s: u64) -> ServerIdentity {
        ServerIdentity {
            run_id: run_id.into(),
            uptime: Duration::from_secs(uptime_s),
        }
    }

    #[test]
    fn parses_info_server() {
        let info = b"# Server\r\nredis_version:7.0.15\r\nrun_id:abc123\r\ntcp_port:7001\r\nuptime_in_seconds:42\r\n";
        assert_eq!(parse_info(info), Some(id("abc123", 42)));
        assert_eq!(parse_info(b"# Server\r\nredis_version:7\r\n"), None);
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
        q.suspend();
        assert!(!q.votes(), "dropped, not yet re-identified");
        q.on_connect(&id("a", 3601));
        assert!(q.votes());
    }

    #[test]
    fn off_means_always_voting() {
        let q = Quarantine::new(None);
        q.on_connect(&id("a", 0));
        q.on_connect(&id("b", 0));
        assert!(q.votes());
    }
}
