//! Node URLs as loadgen uses them: the engine's reading of each (`NodeAddr::parse`, through
//! `redlock_engine::__private`, so every URL means the same servers here as in the engine, with the
//! same defaults, errors and redaction), as the targets its probes connect to.
//!
//! What is loadgen's own: TLS schemes (`rediss://` and its cluster and Sentinel forms) are refused,
//! since its probe, rslock and redis-benchmark all speak plain TCP here, so a TLS node could not be
//! checked or compared; and a node set's servers (cluster members, the master a Sentinel names, the
//! Sentinels themselves) become standalone targets named after their set in messages.

pub use redlock_engine::__private::Topology;
use redlock_engine::__private::{redact_node_url, NodeAddr};

/// A node as loadgen's probes reach it. `Debug` shows the redacted URL only, never a password.
#[derive(Clone, PartialEq, Eq)]
pub struct NodeUrl {
    /// The URL as given with any password (the master's, and a Sentinel password in the query)
    /// replaced by `***`: what messages show.
    pub url: String,
    /// What stands behind it (the engine's [`Topology`], whose `Debug` hides the Sentinel password).
    pub topology: Topology,
    /// Host name or address of the server, first cluster member or first Sentinel.
    pub host: String,
    /// Its TCP port.
    pub port: u16,
    /// More cluster members or Sentinels (`?node=host:port`).
    pub more_hosts: Vec<(String, u16)>,
    /// ACL user, if any.
    pub user: Option<String>,
    /// Password, if any.
    pub password: Option<String>,
    /// Database index (always 0 for a cluster).
    pub db: u32,
}

impl std::fmt::Debug for NodeUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `url` is already redacted; the other fields repeat it, with the password in the clear.
        f.debug_tuple("NodeUrl").field(&self.url).finish()
    }
}

impl NodeUrl {
    /// Parses a node URL as the engine does, and refuses TLS; the error names the URL (without its
    /// password) and what is wrong with it.
    pub fn parse(url: &str) -> Result<Self, String> {
        let shown = redact_node_url(url);
        // The engine's errors name the redacted URL first.
        let addr = NodeAddr::parse(url).map_err(|e| format!("bad node URL {e}"))?;
        if addr.tls {
            return Err(format!(
                "bad node URL {shown}: TLS nodes are not supported by loadgen (its probe, rslock \
                 and redis-benchmark speak plain TCP); use redis://, redis-cluster:// or \
                 redis-sentinel://"
            ));
        }
        Ok(Self {
            url: shown,
            topology: addr.topology,
            host: addr.host,
            port: addr.port,
            more_hosts: addr.more_hosts,
            user: addr.username,
            password: addr.password,
            db: addr.db,
        })
    }

    /// Whether this is one standalone master: what rslock, the raw engine and redis-benchmark can use.
    pub fn is_standalone(&self) -> bool {
        self.topology.is_standalone()
    }

    /// What stands behind the URL, for messages: "a standalone master", "a Redis Cluster", …
    pub fn kind(&self) -> String {
        match &self.topology {
            Topology::Standalone => "a standalone master".into(),
            Topology::Cluster => "a Redis Cluster".into(),
            Topology::Sentinel { service, .. } => {
                format!("the Sentinel-managed master `{service}`")
            }
        }
    }

    /// Every `host:port` the URL lists: the server, the cluster members, or the Sentinels.
    pub fn hosts(&self) -> impl Iterator<Item = (&str, u16)> {
        std::iter::once((self.host.as_str(), self.port))
            .chain(self.more_hosts.iter().map(|(h, p)| (h.as_str(), *p)))
    }

    /// One data server of this node's set (a cluster member, the master a Sentinel named) as a standalone
    /// URL with this node's credentials and `db`, named after the set in messages
    /// (`redis://10.0.0.2:7001 (of redis-cluster://…)`).
    pub fn server(&self, host: &str, port: u16, db: u32) -> NodeUrl {
        let (user, password) = (self.user.clone(), self.password.clone());
        self.member(host, port, db, user, password)
    }

    /// One Sentinel of this node's set as a URL to connect to, with the Sentinels' own credentials
    /// (none unless the query gives them, like the engine) and no database to select.
    pub fn sentinel(&self, host: &str, port: u16) -> NodeUrl {
        let (user, password) = match &self.topology {
            Topology::Sentinel {
                username, password, ..
            } => (username.clone(), password.clone()),
            _ => (None, None),
        };
        self.member(host, port, 0, user, password)
    }

    fn member(
        &self,
        host: &str,
        port: u16,
        db: u32,
        user: Option<String>,
        password: Option<String>,
    ) -> NodeUrl {
        let at = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        NodeUrl {
            url: format!("redis://{at} (of {})", self.url),
            topology: Topology::Standalone,
            host: host.to_string(),
            port,
            more_hosts: Vec::new(),
            user,
            password,
            db,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_password() {
        for url in [
            "redis://ops:hunter2@127.0.0.1:7101/2",
            "redis-sentinel://ops:hunter2@h:26379?sentinelServiceName=m&sentinelPassword=hunter2",
        ] {
            let u = NodeUrl::parse(url).unwrap();
            for shown in [format!("{u:?}"), format!("{:?}", u.server("h", 1, 0))] {
                assert!(!shown.contains("hunter2"), "{shown}");
            }
        }
    }

    #[test]
    fn standalone_takes_the_engines_reading() {
        let u = NodeUrl::parse("redis://me:s%40cret@localhost:7000/2").unwrap();
        assert!(u.is_standalone());
        assert_eq!((u.host.as_str(), u.port, u.db), ("localhost", 7000, 2));
        // Percent-decoded as the engine does, so AUTH sends the same password.
        assert_eq!(
            (u.user.as_deref(), u.password.as_deref()),
            (Some("me"), Some("s@cret"))
        );
        assert_eq!(u.url, "redis://me:***@localhost:7000/2");
    }

    #[test]
    fn cluster_and_sentinel() {
        let c =
            NodeUrl::parse("redis-cluster://u:p@10.0.0.1:7000?node=10.0.0.2:7001&node=[::1]:7002")
                .unwrap();
        assert_eq!(c.topology, Topology::Cluster);
        assert!(!c.is_standalone());
        assert_eq!(
            c.hosts().collect::<Vec<_>>(),
            [("10.0.0.1", 7000), ("10.0.0.2", 7001), ("::1", 7002)]
        );
        assert_eq!(
            c.url,
            "redis-cluster://u:***@10.0.0.1:7000?node=10.0.0.2:7001&node=[::1]:7002"
        );
        let m = c.server("::1", 7002, 0);
        assert!(m.is_standalone());
        assert_eq!(
            (m.user.as_deref(), m.password.as_deref()),
            (Some("u"), Some("p"))
        );
        assert!(
            m.url
                .starts_with("redis://[::1]:7002 (of redis-cluster://u:***@"),
            "{}",
            m.url
        );
        let s = NodeUrl::parse(
            "redis-sentinel://m:pw@s1/2?sentinelServiceName=lo%63ks&node=s2:26380&sentinelPassword=s%40nt",
        )
        .unwrap();
        assert_eq!(
            s.topology,
            Topology::Sentinel {
                service: "locks".into(),
                username: None,
                password: Some("s@nt".into()),
            }
        );
        assert_eq!((s.port, s.db), (26379, 2));
        assert_eq!(
            s.hosts().collect::<Vec<_>>(),
            [("s1", 26379), ("s2", 26380)]
        );
        assert_eq!(
            s.url,
            "redis-sentinel://m:***@s1/2?sentinelServiceName=lo%63ks&node=s2:26380&sentinelPassword=***"
        );
        // The master gets the URL's credentials and database; a Sentinel its own, and no SELECT.
        let master = s.server("10.0.0.9", 6379, s.db);
        assert_eq!(
            (
                master.user.as_deref(),
                master.password.as_deref(),
                master.db
            ),
            (Some("m"), Some("pw"), 2)
        );
        let sentinel = s.sentinel("s2", 26380);
        assert_eq!(
            (sentinel.user, sentinel.password.as_deref(), sentinel.db),
            (None, Some("s@nt"), 0)
        );
        let bare = NodeUrl::parse("redis-sentinel://m:pw@s1?sentinelServiceName=x").unwrap();
        assert_eq!(
            (
                bare.sentinel("s1", 26379).user,
                bare.sentinel("s1", 26379).password
            ),
            (None, None)
        );
    }

    #[test]
    fn refuses_what_the_engine_refuses_and_tls() {
        // The grammar's refusals are the engine's (its tests list them); here, that they arrive
        // as loadgen's one-line error, without the password.
        for bad in ["http://x:1", "redis://u:hunter2@h:1/x", ""] {
            let err = NodeUrl::parse(bad).unwrap_err();
            assert!(err.starts_with("bad node URL"), "{bad}: {err}");
            assert!(!err.contains("hunter2"), "{err}");
        }
        for tls in [
            "rediss://:hunter2@h:1",
            "rediss-cluster://h:1",
            "rediss-sentinel://h:1?sentinelServiceName=m&sentinelPassword=hunter2",
        ] {
            let err = NodeUrl::parse(tls).unwrap_err();
            assert!(
                err.starts_with("bad node URL") && err.contains("TLS") && !err.contains("hunter2"),
                "{tls}: {err}"
            );
        }
    }
}
