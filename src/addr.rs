//! Node addresses parsed into a [`NodeAddr`]:
//!
//! - `redis://[user:password@]host:port[/db]`: one standalone master (`rediss://` for TLS);
//! - `redis-cluster://[user:password@]host:port[?node=host:port&...]`: a Redis Cluster, reached through
//!   any of the listed members (`rediss-cluster://` for TLS);
//! - `redis-sentinel://[user:password@]host:port[/db]?sentinelServiceName=name[&node=host:port...]`: the
//!   master a set of Sentinels names (the hosts are Sentinels; `rediss-sentinel://` for TLS to the
//!   master). The query parameters are fred's, so one URL works in both places.
//!
//! A standalone URL may also say `?durable=true`: the server keeps its data across a crash
//! (`appendonly yes`, `appendfsync always`), so crashed-node quarantine skips it. The engine checks the
//! claim at every connect (`CONFIG GET`) and does not trust a node whose settings refute it.

use std::fmt;

/// Where one Redis node is and how to log in.
#[derive(Clone, PartialEq, Eq)]
pub struct NodeAddr {
    /// Host name or address: the server, the first cluster member, or the first Sentinel.
    pub host: String,
    /// Its TCP port.
    pub port: u16,
    /// Database index (always 0 for a cluster).
    pub db: u32,
    /// ACL user (the data servers'), if any.
    pub username: Option<String>,
    /// Password (the data servers'), if any. Never printed.
    pub password: Option<String>,
    /// `rediss://`: the connection runs over TLS.
    pub tls: bool,
    /// What stands behind the address: one master, a cluster, or a Sentinel-managed master.
    pub topology: Topology,
    /// More members of the cluster, or more Sentinels (`?node=host:port`), after `host:port`.
    pub more_hosts: Vec<(String, u16)>,
    /// `?durable=true` (standalone only): the operator says the server fsyncs every write before it
    /// replies, so a restart loses no lock key and quarantine need not hold its vote back.
    pub durable: bool,
}

/// What one lock "node" is made of. Every kind gives one vote in the quorum. `Debug` shows the
/// Sentinels' password as `***`.
#[derive(Clone, PartialEq, Eq)]
pub enum Topology {
    /// One standalone master.
    Standalone,
    /// A Redis Cluster: the key's hash slot picks the master (keys of one lock share a hash tag).
    Cluster,
    /// The master that Sentinels name for this service; `host:port` and `more_hosts` are Sentinels.
    /// The URL's credentials are the master's; the Sentinels' own are separate (none by default).
    Sentinel {
        /// The name the Sentinels know the master by (`sentinelServiceName=`).
        service: String,
        /// The Sentinels' own ACL user (`sentinelUsername=`), if any.
        username: Option<String>,
        /// The Sentinels' own password (`sentinelPassword=`), if any. Never printed.
        password: Option<String>,
    },
}

impl Topology {
    /// Whether the engine's own connection can serve this kind (it speaks to one server only).
    pub fn is_standalone(&self) -> bool {
        matches!(self, Self::Standalone)
    }
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Standalone => f.write_str("Standalone"),
            Self::Cluster => f.write_str("Cluster"),
            Self::Sentinel {
                service,
                username,
                password,
            } => f
                .debug_struct("Sentinel")
                .field("service", service)
                .field("username", username)
                .field("password", &password.as_ref().map(|_| "***"))
                .finish(),
        }
    }
}

impl NodeAddr {
    /// Parses a node URL (see the module doc). Errors name the URL (without its password) and what is
    /// wrong with it.
    pub fn parse(url: &str) -> Result<Self, String> {
        let bad = |what: &str| format!("{}: {what}", redact(url));
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("expected a URL like redis://host:port"))?;
        let (tls, kind) = match scheme {
            "redis" => (false, "standalone"),
            "rediss" => (true, "standalone"),
            "redis-cluster" => (false, "cluster"),
            "rediss-cluster" => (true, "cluster"),
            "redis-sentinel" => (false, "sentinel"),
            "rediss-sentinel" => (true, "sentinel"),
            _ => {
                return Err(bad(
                    "the scheme must be redis://, rediss://, redis-cluster://, \
                     rediss-cluster://, redis-sentinel:// or rediss-sentinel://",
                ))
            }
        };
        let (rest, query) = match rest.split_once('?') {
            Some((rest, query)) => (rest, Some(query)),
            None => (rest, None),
        };
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((auth, rest)) => (Some(auth), rest),
            None => (None, rest),
        };
        let (hostport, db) = match rest.split_once('/') {
            Some((hp, "")) => (hp, 0),
            Some((hp, db)) => (
                hp,
                db.parse::<u32>()
                    .map_err(|_| bad("database must be a number"))?,
            ),
            None => (rest, 0),
        };
        // Sentinels listen on 26379 by default, servers on 6379.
        let default_port = if kind == "sentinel" { 26379 } else { 6379 };
        let (host, port) =
            split_host_port(hostport, default_port).ok_or_else(|| bad("expected host:port"))?;
        let (username, password) = match auth {
            None => (None, None),
            Some(auth) => {
                let (user, pass) = match auth.split_once(':') {
                    Some((u, p)) => (u, Some(p)),
                    None => (auth, None),
                };
                let user = (!user.is_empty()).then(|| percent_decode(user));
                (user, pass.map(percent_decode))
            }
        };
        let mut more_hosts = Vec::new();
        let mut durable = false;
        let (mut service, mut sentinel_user, mut sentinel_pass) = (None, None, None);
        for pair in query.into_iter().flat_map(|q| q.split('&')) {
            match pair.split_once('=') {
                Some(("node", hp)) if kind != "standalone" => more_hosts.push(
                    split_host_port(hp, default_port)
                        .ok_or_else(|| bad("node= expects host:port"))?,
                ),
                Some(("sentinelServiceName", name)) if kind == "sentinel" && !name.is_empty() => {
                    service = Some(percent_decode(name))
                }
                Some(("sentinelUsername", user)) if kind == "sentinel" => {
                    sentinel_user = Some(percent_decode(user))
                }
                Some(("sentinelPassword", pass)) if kind == "sentinel" => {
                    sentinel_pass = Some(percent_decode(pass))
                }
                // Not for Cluster or Sentinel sets: a failover promotes a replica that may lack the
                // last writes, whatever the fsync policy, so those sets stay under quarantine.
                Some(("durable", value)) if kind == "standalone" => {
                    durable = match value {
                        "true" | "yes" | "1" => true,
                        "false" | "no" | "0" => false,
                        _ => return Err(bad("durable= expects true or false")),
                    }
                }
                Some(("durable", _)) => {
                    return Err(bad(
                        "durable= is for standalone nodes: a failover can lose writes whatever \
                         the fsync policy, so Cluster and Sentinel node sets stay under quarantine",
                    ))
                }
                // The name only: the value may be a password meant for another kind of URL.
                _ => {
                    let name = pair.split_once('=').map_or(pair, |(name, _)| name);
                    return Err(bad(&format!("unsupported query parameter {name:?}")));
                }
            }
        }
        let topology = match kind {
            "standalone" => Topology::Standalone,
            "cluster" if db != 0 => return Err(bad("a Redis Cluster has only database 0")),
            "cluster" => Topology::Cluster,
            _ => Topology::Sentinel {
                service: service.ok_or_else(|| bad("sentinelServiceName= is required"))?,
                username: sentinel_user,
                password: sentinel_pass,
            },
        };
        Ok(Self {
            host,
            port,
            db,
            username,
            password,
            tls,
            topology,
            more_hosts,
            durable,
        })
    }

    /// The key two addresses are compared by for duplicate detection: the server, not the database —
    /// two databases of one server are one node (one crash loses both), so they must not vote twice.
    /// Different names for one host are caught after connecting, by `run_id` (with quarantine on).
    pub(crate) fn identity(&self) -> (String, u16) {
        (self.host.to_ascii_lowercase(), self.port)
    }
}

fn split_host_port(s: &str, default_port: u16) -> Option<(String, u16)> {
    // `[::1]:6379` for IPv6, `host:port` otherwise.
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p != 0)?,
        None => default_port,
    };
    Some((host.to_string(), port))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The URL with any password replaced by `***`, for messages and `Debug`: the one before `@`, and
/// every query value but those known to hold none (`node`, `sentinelServiceName`,
/// `sentinelUsername`, `durable`), so a Sentinel password, a misspelt one, or a fragment of one
/// that holds `&` is hidden whole. Written for URLs that do not parse too (those reach error
/// messages): the credentials end at the **last** `@` before any `sentinelPassword=`, so a password
/// holding `?`, `/` or `@` is hidden whole.
pub fn redact(url: &str) -> String {
    /// Query parameters whose values are not secrets.
    const SHOWN: [&str; 4] = ["node", "sentinelServiceName", "sentinelUsername", "durable"];
    let head_end = url.find("sentinelPassword=").unwrap_or(url.len());
    let head = &url[..head_end];
    let mut out = String::with_capacity(url.len() + 3);
    let rest = match head.rfind('@') {
        Some(at) => {
            // A scheme counts only when it is one (letters, digits, `+-.`) before the
            // credentials: `://` inside a password is not a scheme.
            let start = head[..at]
                .find("://")
                .filter(|&i| {
                    url[..i]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                })
                .map_or(0, |i| i + 3);
            out.push_str(&url[..start]);
            match url[start..at].split_once(':') {
                Some((user, _)) => {
                    out.push_str(user);
                    out.push_str(":***");
                }
                None => out.push_str(&url[start..at]),
            }
            &url[at..]
        }
        None => url,
    };
    let Some((authority, query)) = rest.split_once('?') else {
        out.push_str(rest);
        return out;
    };
    out.push_str(authority);
    out.push('?');
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if SHOWN.contains(&name) => pair.to_string(),
            Some((name, _)) => format!("{name}=***"),
            None if SHOWN.contains(&pair) => pair.to_string(),
            None => "***".to_string(),
        })
        .collect();
    out.push_str(&pairs.join("&"));
    out
}

impl fmt::Display for NodeAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match (&self.topology, self.tls) {
            (Topology::Standalone, false) => "redis",
            (Topology::Standalone, true) => "rediss",
            (Topology::Cluster, false) => "redis-cluster",
            (Topology::Cluster, true) => "rediss-cluster",
            (Topology::Sentinel { .. }, false) => "redis-sentinel",
            (Topology::Sentinel { .. }, true) => "rediss-sentinel",
        };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}/{}", self.host, self.port, self.db)?;
        } else {
            write!(f, "{scheme}://{}:{}/{}", self.host, self.port, self.db)?;
        }
        if let Topology::Sentinel { service, .. } = &self.topology {
            write!(f, "?sentinelServiceName={service}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for NodeAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Display leaves out the credentials on purpose.
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
#[path = "addr_tests.rs"]
mod tests;
