//! A tiny blocking Redis client for the few commands loadgen itself sends (PING, INFO, SCRIPT LOAD):
//! reachability checks before a run, the health monitor during it, and script loading for the ceiling.
//! Kept apart from the engines under test so it adds nothing to their measurements.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// A parsed `redis://[user[:password]@]host:port[/db]` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeUrl {
    /// The URL as given.
    pub url: String,
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// ACL user, if any.
    pub user: Option<String>,
    /// Password, if any.
    pub password: Option<String>,
    /// Database index.
    pub db: u32,
}

impl NodeUrl {
    /// Parses a node URL; the error names the URL.
    pub fn parse(url: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("bad node URL `{url}`: {why} (expected redis://host:port)");
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| bad("only redis:// URLs are supported"))?;
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((auth, rest)) => (Some(auth), rest),
            None => (None, rest),
        };
        let (hostport, db) = match rest.split_once('/') {
            Some((hp, "")) => (hp, 0),
            Some((hp, db)) => (
                hp,
                db.parse()
                    .map_err(|_| bad("the database is not a number"))?,
            ),
            None => (rest, 0),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse::<u16>()
                    .map_err(|_| bad("the port is not a number"))?,
            ),
            None => (hostport, 6379),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let (user, password) = match auth {
            None => (None, None),
            Some(a) => match a.split_once(':') {
                Some(("", p)) => (None, Some(p.to_string())),
                Some((u, p)) => (Some(u.to_string()), Some(p.to_string())),
                None => (Some(a.to_string()), None),
            },
        };
        Ok(Self {
            url: url.to_string(),
            host: host.to_string(),
            port,
            user,
            password,
            db,
        })
    }
}

/// A reply, reduced to what loadgen reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`, `+PONG`.
    Simple(String),
    /// `-ERR …`.
    Error(String),
    /// `:1`.
    Int(i64),
    /// A bulk string (`None` for nil).
    Bulk(Option<Vec<u8>>),
}

/// One blocking connection with read and write timeouts.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    /// Connects (bounded by `timeout`), authenticates and selects the database.
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

/// Parses one reply from the front of `buf`: `None` if incomplete.
fn parse(buf: &[u8]) -> Result<Option<(Reply, usize)>, String> {
    let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line = String::from_utf8_lossy(&buf[1..end]).into_owned();
    let after = end + 2;
    let reply = match buf[0] {
        b'+' => Reply::Simple(line),
        b'-' => Reply::Error(line),
        b':' => Reply::Int(
            line.parse()
                .map_err(|_| format!("bad integer reply `{line}`"))?,
        ),
        b'$' => {
            let len: i64 = line
                .parse()
                .map_err(|_| format!("bad bulk length `{line}`"))?;
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
        other => return Err(format!("unexpected reply type `{}`", other as char)),
    };
    Ok(Some((reply, after)))
}

/// Checks that `node` answers PING; returns its `redis_version`.
pub fn check(node: &NodeUrl, timeout: Duration) -> Result<String, String> {
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
    Ok(info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .map_or_else(|| "unknown".into(), |v| v.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = NodeUrl::parse("redis://127.0.0.1:7101").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.db), ("127.0.0.1", 7101, 0));
        let u = NodeUrl::parse("redis://me:secret@localhost:7000/2").unwrap();
        assert_eq!(
            (u.user.as_deref(), u.password.as_deref(), u.db),
            (Some("me"), Some("secret"), 2)
        );
        let u = NodeUrl::parse("redis://:pw@h").unwrap();
        assert_eq!(
            (u.user, u.password.as_deref(), u.port),
            (None, Some("pw"), 6379)
        );
        assert!(NodeUrl::parse("http://x:1").is_err());
        assert!(NodeUrl::parse("redis://x:port").is_err());
        assert!(NodeUrl::parse("redis://:1").is_err());
    }

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
        assert!(parse(b"*1\r\n").is_err());
    }
}
