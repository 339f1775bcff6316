//! A tiny blocking Redis client for the few commands loadgen itself sends (PING, INFO, SCRIPT LOAD, and
//! CLUSTER INFO / SENTINEL to find the servers behind a node URL): reachability checks before a run, the
//! health monitor during it, and script loading for the ceiling. Kept apart from the engines under test
//! so it adds nothing to their measurements.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::addr::{NodeUrl, Topology};

/// A reply, reduced to what loadgen reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`, `+PONG`.
    Simple(String),
    /// `-ERR …`.
    Error(String),
    /// `:1`.
    Int(i64),
    /// A bulk string (`None` for nil, and for a nil array: RESP2's two nils are one here).
    Bulk(Option<Vec<u8>>),
    /// `*2 …`.
    Array(Vec<Reply>),
}

/// One blocking connection with read and write timeouts.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    /// Connects (bounded by `timeout`), authenticates and selects the database. `node` is one server:
    /// a standalone URL, or one from [`servers`] or [`NodeUrl::server`].
    pub fn open(node: &NodeUrl, timeout: Duration) -> Result<Self, String> {
        let addrs = (node.host.as_str(), node.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}: {e}", node.url))?;
        let mut last = format!("cannot resolve {}", node.url);
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(stream) => {
                    stream
                        .set_read_timeout(Some(timeout))
                        .map_err(|e| e.to_string())?;
                    stream
                        .set_write_timeout(Some(timeout))
                        .map_err(|e| e.to_string())?;
                    stream.set_nodelay(true).ok();
                    let mut conn = Self {
                        stream,
                        buf: Vec::new(),
                    };
                    conn.handshake(node)?;
                    return Ok(conn);
                }
                Err(e) => last = format!("cannot reach node {}: {e}", node.url),
            }
        }
        Err(last)
    }

    fn handshake(&mut self, node: &NodeUrl) -> Result<(), String> {
        if let Some(password) = &node.password {
            let reply = match &node.user {
                Some(user) => self.cmd(&[b"AUTH", user.as_bytes(), password.as_bytes()])?,
                None => self.cmd(&[b"AUTH", password.as_bytes()])?,
            };
            if let Reply::Error(e) = reply {
                return Err(format!("node {}: AUTH failed: {e}", node.url));
            }
        }
        if node.db != 0 {
            if let Reply::Error(e) = self.cmd(&[b"SELECT", node.db.to_string().as_bytes()])? {
                return Err(format!("node {}: SELECT failed: {e}", node.url));
            }
        }
        Ok(())
    }

    /// Sends one command and reads its reply.
    pub fn cmd(&mut self, args: &[&[u8]]) -> Result<Reply, String> {
        let mut req = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            req.extend_from_slice(a);
            req.extend_from_slice(b"\r\n");
        }
        self.stream.write_all(&req).map_err(describe)?;
        let mut chunk = [0u8; 8192];
        loop {
            if let Some((reply, used)) = parse(&self.buf)? {
                self.buf.drain(..used);
                return Ok(reply);
            }
            let n = self.stream.read(&mut chunk).map_err(describe)?;
            if n == 0 {
                return Err("connection closed".into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

fn describe(e: std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => "no reply in time".into(),
        _ => e.to_string(),
    }
}

/// The number a reply line carries (`what` it is, for the error): integers, bulk and array lengths
/// are read alike.
fn number<T: std::str::FromStr>(line: &str, what: &str) -> Result<T, String> {
    line.parse().map_err(|_| format!("bad {what} `{line}`"))
}

/// Parses one reply from the front of `buf`: `None` if incomplete.
fn parse(buf: &[u8]) -> Result<Option<(Reply, usize)>, String> {
    let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    if end == 0 {
        return Err("a reply line without a type".into());
    }
    let line = String::from_utf8_lossy(&buf[1..end]).into_owned();
    let after = end + 2;
    let reply = match buf[0] {
        b'+' => Reply::Simple(line),
        b'-' => Reply::Error(line),
        b':' => Reply::Int(number(&line, "integer reply")?),
        b'$' => {
            let len: i64 = number(&line, "bulk length")?;
            if len < 0 {
                return Ok(Some((Reply::Bulk(None), after)));
            }
            let stop = after + len as usize;
            if buf.len() < stop + 2 {
                return Ok(None);
            }
            return Ok(Some((
                Reply::Bulk(Some(buf[after..stop].to_vec())),
                stop + 2,
            )));
        }
        b'*' => {
            let len: i64 = number(&line, "array length")?;
            if len < 0 {
                return Ok(Some((Reply::Bulk(None), after)));
            }
            let mut items = Vec::new();
            let mut at = after;
            for _ in 0..len {
                let Some((item, used)) = parse(&buf[at..])? else {
                    return Ok(None);
                };
                items.push(item);
                at += used;
            }
            return Ok(Some((Reply::Array(items), at)));
        }
        other => return Err(format!("unexpected reply type `{}`", other as char)),
    };
    Ok(Some((reply, after)))
}

/// The servers behind `node` that loadgen itself checks before a run and watches during it, each as a
/// standalone URL with `node`'s credentials:
/// - a standalone node is itself;
/// - a cluster is every member the URL lists (not the members found by discovery: those the user named),
///   once the first says `cluster_state:ok`;
/// - a Sentinel node is the master the first answering Sentinel names now (asked with the Sentinels' own
///   credentials, as the engine does), so a failover mid-run shows as that master lost, like a standalone
///   node going away.
pub fn servers(node: &NodeUrl, timeout: Duration) -> Result<Vec<NodeUrl>, String> {
    match &node.topology {
        Topology::Standalone => Ok(vec![node.clone()]),
        Topology::Cluster => {
            let members: Vec<NodeUrl> = node.hosts().map(|(h, p)| node.server(h, p, 0)).collect();
            cluster_ok(&members[0], timeout)?;
            Ok(members)
        }
        Topology::Sentinel { service, .. } => {
            let mut last = String::new();
            for (host, port) in node.hosts() {
                match sentinel_master(&node.sentinel(host, port), service, timeout) {
                    Ok((host, port)) => return Ok(vec![node.server(&host, port, node.db)]),
                    Err(e) => last = e,
                }
            }
            Err(last)
        }
    }
}

/// Checks that `member` is in cluster mode and its cluster serves every slot.
fn cluster_ok(member: &NodeUrl, timeout: Duration) -> Result<(), String> {
    let mut conn = Conn::open(member, timeout)?;
    let text = match conn.cmd(&[b"CLUSTER", b"INFO"]) {
        Ok(Reply::Bulk(Some(text))) => String::from_utf8_lossy(&text).into_owned(),
        Ok(Reply::Error(e)) => {
            return Err(format!("node {} is not a cluster member: {e}", member.url))
        }
        Ok(other) => {
            return Err(format!(
                "node {} answered CLUSTER INFO with {other:?}",
                member.url
            ))
        }
        Err(e) => {
            return Err(format!(
                "node {} did not answer CLUSTER INFO: {e}",
                member.url
            ))
        }
    };
    match info_field(&text, "cluster_state") {
        Some("ok") => Ok(()),
        state => Err(format!(
            "node {}: the cluster's state is {}",
            member.url,
            state.unwrap_or("unknown")
        )),
    }
}

/// The `host:port` of the master `service` that `sentinel` names.
fn sentinel_master(
    sentinel: &NodeUrl,
    service: &str,
    timeout: Duration,
) -> Result<(String, u16), String> {
    let mut conn = Conn::open(sentinel, timeout)?;
    let ask = [
        &b"SENTINEL"[..],
        b"get-master-addr-by-name",
        service.as_bytes(),
    ];
    let who = &sentinel.url;
    match conn.cmd(&ask) {
        Ok(Reply::Array(items)) => match items.as_slice() {
            [Reply::Bulk(Some(host)), Reply::Bulk(Some(port))] => {
                let host = String::from_utf8_lossy(host).into_owned();
                let port = String::from_utf8_lossy(port);
                let port = port
                    .parse()
                    .map_err(|_| format!("Sentinel {who} named master port `{port}`"))?;
                Ok((host, port))
            }
            _ => Err(format!(
                "Sentinel {who} answered {items:?} for master `{service}`"
            )),
        },
        Ok(Reply::Bulk(None)) => Err(format!("Sentinel {who} knows no master named `{service}`")),
        // The URL's credentials are the master's: a Sentinel that wants its own refuses without them.
        Ok(Reply::Error(e)) if ["NOAUTH", "WRONGPASS", "NOPERM"].iter().any(|c| e.starts_with(c)) => {
            Err(format!(
                "Sentinel {who} refused: {e} (the Sentinels' own credentials go in sentinelUsername= and sentinelPassword=)"
            ))
        }
        Ok(Reply::Error(e)) => Err(format!("node {who} is not a Sentinel: {e}")),
        Ok(other) => Err(format!("Sentinel {who} answered {other:?}")),
        Err(e) => Err(format!("Sentinel {who} did not answer: {e}")),
    }
}

/// A `name:value` line of an INFO-style reply.
fn info_field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

/// What one server is, from its `INFO server`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The server's URL (password redacted), as [`NodeUrl::url`] shows it.
    pub node: String,
    /// `server_name` (`valkey`; other forks may set it too), else `redis`; `unknown` without `INFO`.
    pub name: String,
    /// `<server_name>_version` (`valkey_version:9.1.2`), else `redis_version`; `unknown` if neither.
    pub version: String,
    /// `redis_version` (Valkey reports the Redis version it is compatible with, e.g. `7.2.4`).
    pub redis_version: String,
}

impl ServerInfo {
    /// Reads an `INFO server` reply (empty when the server did not answer `INFO`).
    pub fn from_info(node: &str, info: &str) -> Self {
        let unknown = || "unknown".to_string();
        let redis_version = info_field(info, "redis_version").map(str::to_string);
        let (name, version) = match info_field(info, "server_name").filter(|n| !n.is_empty()) {
            Some(name) => {
                let own = info_field(info, &format!("{name}_version")).map(str::to_string);
                (name.to_string(), own.or_else(|| redis_version.clone()))
            }
            None if info.trim().is_empty() => (unknown(), None),
            None => ("redis".to_string(), redis_version.clone()),
        };
        Self {
            node: node.to_string(),
            name,
            version: version.unwrap_or_else(unknown),
            redis_version: redis_version.unwrap_or_else(unknown),
        }
    }

    /// `valkey 9.1.2`.
    pub fn label(&self) -> String {
        format!("{} {}", self.name, self.version)
    }
}

/// Checks that `node` (one server) answers PING; returns what it is (`INFO server`).
pub fn check(node: &NodeUrl, timeout: Duration) -> Result<ServerInfo, String> {
    let mut conn = Conn::open(node, timeout)?;
    match conn.cmd(&[b"PING"]) {
        Ok(Reply::Simple(s)) if s == "PONG" => {}
        Ok(other) => return Err(format!("node {} answered PING with {other:?}", node.url)),
        Err(e) => return Err(format!("node {} did not answer PING: {e}", node.url)),
    }
    let info = match conn.cmd(&[b"INFO", b"server"]) {
        Ok(Reply::Bulk(Some(text))) => String::from_utf8_lossy(&text).into_owned(),
        _ => String::new(),
    };
    Ok(ServerInfo::from_info(&node.url, &info))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies() {
        assert_eq!(
            parse(b"+PONG\r\n").unwrap(),
            Some((Reply::Simple("PONG".into()), 7))
        );
        assert_eq!(parse(b":-1\r\n").unwrap(), Some((Reply::Int(-1), 5)));
        assert_eq!(parse(b"$3\r\nab").unwrap(), None);
        assert_eq!(
            parse(b"$2\r\nab\r\n").unwrap(),
            Some((Reply::Bulk(Some(b"ab".to_vec())), 8))
        );
        assert_eq!(parse(b"$-1\r\n").unwrap(), Some((Reply::Bulk(None), 5)));
        assert_eq!(parse(b"*2\r\n$1\r\na\r\n").unwrap(), None);
        assert_eq!(
            parse(b"*2\r\n$1\r\na\r\n:7\r\n").unwrap(),
            Some((
                Reply::Array(vec![Reply::Bulk(Some(b"a".to_vec())), Reply::Int(7)]),
                15
            ))
        );
        assert_eq!(parse(b"*-1\r\n").unwrap(), Some((Reply::Bulk(None), 5)));
        assert!(parse(b"~1\r\n").is_err());
        assert_eq!(
            info_field(
                "# Server\r\nredis_version:7.0.15\r\nredis_mode:cluster\r\n",
                "redis_version"
            ),
            Some("7.0.15")
        );
    }

    #[test]
    fn server_name_and_version_from_info() {
        // Valkey 9.1.2's INFO server (abridged): its own name and version, and the Redis version it
        // is compatible with.
        let valkey = "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\nvalkey_release_stage:ga\r\nredis_git_sha1:00000000\r\n";
        let v = ServerInfo::from_info("redis://127.0.0.1:1", valkey);
        assert_eq!((v.name.as_str(), v.version.as_str()), ("valkey", "9.1.2"));
        assert_eq!(v.redis_version, "7.2.4");
        assert_eq!(v.label(), "valkey 9.1.2");
        assert_eq!(v.node, "redis://127.0.0.1:1");
        // Redis has no server_name.
        let redis = "# Server\r\nredis_version:6.2.14\r\nredis_git_sha1:40305114\r\nredis_mode:standalone\r\n";
        let r = ServerInfo::from_info("n", redis);
        assert_eq!((r.name.as_str(), r.version.as_str()), ("redis", "6.2.14"));
        assert_eq!(r.redis_version, "6.2.14");
        // A server_name without its own version field: the redis_version.
        let fork = "server_name:fork\nredis_version:7.0.0\n";
        assert_eq!(ServerInfo::from_info("n", fork).label(), "fork 7.0.0");
        // No INFO at all (refused by an ACL): unknown, not a guess.
        let none = ServerInfo::from_info("n", "");
        assert_eq!(
            (none.name.as_str(), none.version.as_str()),
            ("unknown", "unknown")
        );
        // `valkey_version` must not be read as `valkey_version_extra` or the like.
        let prefixed = "server_name:valkey\nvalkey_versionx:1\nvalkey_version:9.0.0\n";
        assert_eq!(ServerInfo::from_info("n", prefixed).version, "9.0.0");
    }
}
