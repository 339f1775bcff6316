//! Node addresses: `redis://[user:password@]host:port[/db]` (or `rediss://` for TLS) parsed into a
//! [`NodeAddr`].

use std::fmt;

/// Where one Redis node is and how to log in.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct NodeAddr {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) db: u32,
    pub(crate) username: Option<String>,
    pub(crate) password: Option<String>,
    /// `rediss://`: the connection runs over TLS.
    pub(crate) tls: bool,
}

impl NodeAddr {
    /// Parses a `redis://` URL. Errors name the URL (without its password) and what is wrong with it.
    pub(crate) fn parse(url: &str) -> Result<Self, String> {
        let (tls, rest) = match (url.strip_prefix("redis://"), url.strip_prefix("rediss://")) {
            (Some(rest), _) => (false, rest),
            (_, Some(rest)) => (true, rest),
            _ => {
                return Err(format!(
                    "{}: only redis:// and rediss:// URLs are supported",
                    redact(url)
                ))
            }
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
                    .map_err(|_| format!("{}: database must be a number", redact(url)))?,
            ),
            None => (rest, 0),
        };
        let (host, port) = split_host_port(hostport)
            .ok_or_else(|| format!("{}: expected host:port", redact(url)))?;
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
        Ok(Self {
            host,
            port,
            db,
            username,
            password,
            tls,
        })
    }

    /// The key two addresses are compared by for duplicate detection: the server, not the database —
    /// two databases of one server are one node (one crash loses both), so they must not vote twice.
    /// Different names for one host are caught after connecting, by `run_id` (with quarantine on).
    pub(crate) fn identity(&self) -> (String, u16) {
        (self.host.to_ascii_lowercase(), self.port)
    }
}

fn split_host_port(s: &str) -> Option<(String, u16)> {
    // `[::1]:6379` for IPv6, `host:port` otherwise; the port defaults to 6379.
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
        None => 6379,
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

/// The URL with any password replaced, for error messages.
fn redact(url: &str) -> String {
    // Everything before the last '@' may hold credentials, with or without a scheme in front.
    let Some(at) = url.rfind('@') else {
        return url.to_string();
    };
    let start = url.find("://").map_or(0, |s| s + 3).min(at);
    let auth = &url[start..at];
    match auth.split_once(':') {
        Some((user, _)) => format!("{}{user}:***{}", &url[..start], &url[at..]),
        None => url.to_string(),
    }
}

impl fmt::Display for NodeAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "rediss" } else { "redis" };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}/{}", self.host, self.port, self.db)
        } else {
            write!(f, "{scheme}://{}:{}/{}", self.host, self.port, self.db)
        }
    }
}

impl fmt::Debug for NodeAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Display leaves out the credentials on purpose.
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_full_and_short_forms() {
        let a = NodeAddr::parse("redis://user:p%40ss@127.0.0.1:7001/3").unwrap();
        assert_eq!((a.host.as_str(), a.port, a.db), ("127.0.0.1", 7001, 3));
        assert_eq!(a.username.as_deref(), Some("user"));
        assert_eq!(a.password.as_deref(), Some("p@ss"));
        let s = NodeAddr::parse("rediss://cache.internal:6380").unwrap();
        assert!(s.tls && s.port == 6380);
        assert!(!a.tls);
        let b = NodeAddr::parse("redis://localhost").unwrap();
        assert_eq!(
            (b.port, b.db, b.username, b.password),
            (6379, 0, None, None)
        );
        let c = NodeAddr::parse("redis://:secret@[::1]:7000/").unwrap();
        assert_eq!((c.host.as_str(), c.port), ("::1", 7000));
        assert_eq!((c.username, c.password.as_deref()), (None, Some("secret")));
    }

    #[test]
    fn rejects_bad_urls_without_leaking_passwords() {
        for bad in [
            "http://x:1",
            "redis://:1",
            "redis://h:0",
            "redis://h:99999",
            "redis://h:1/x",
            "",
        ] {
            assert!(NodeAddr::parse(bad).is_err(), "{bad}");
        }
        let err = NodeAddr::parse("redis://u:hunter2@h:1/x").unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
        let err = NodeAddr::parse("default:hunter2@127.0.0.1:6379").unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
    }
}
