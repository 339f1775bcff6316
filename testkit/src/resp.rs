//! The smallest RESP client that does the job: one command per fresh connection, the reply as text.
//! The kit and the tests use it to prod nodes (PING, GET, PTTL, INFO, CLUSTER INFO); it never takes part
//! in locking, so simplicity beats speed here.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Encodes `args` as a RESP array of bulk strings.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut req = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        req.extend_from_slice(a);
        req.extend_from_slice(b"\r\n");
    }
    req
}

/// Runs one command against `127.0.0.1:port` and returns the reply as text (see [`parse`]). `None` if
/// the node did not answer within `timeout`.
pub fn command(port: u16, args: &[&[u8]], timeout: Duration) -> Option<String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, timeout).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_write_timeout(Some(timeout)).ok()?;
    s.write_all(&encode(args)).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    // Bounded: a reply larger than 1 MiB is not something a test asks for.
    while buf.len() < 1 << 20 {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(reply) = parse(&buf) {
            return Some(reply);
        }
    }
    None
}

/// Parses one complete reply; `None` if more bytes are needed. `nil` for a null bulk, the message for
/// errors (`ERR…`, `MOVED…`), the integer or the string otherwise; arrays come back as their elements
/// joined by spaces (enough for `SCRIPT EXISTS` or `SENTINEL GET-MASTER-ADDR-BY-NAME`).
pub fn parse(buf: &[u8]) -> Option<String> {
    parse_at(buf, 0).map(|(reply, _)| reply)
}

/// Parses the reply starting at `at`; returns it and where it ends.
fn parse_at(buf: &[u8], at: usize) -> Option<(String, usize)> {
    let rest = buf.get(at..)?;
    let end = at + rest.windows(2).position(|w| w == b"\r\n")?;
    let line = String::from_utf8_lossy(&buf[at + 1..end]).into_owned();
    let next = end + 2;
    match buf[at] {
        b'$' => {
            let len: i64 = line.parse().ok()?;
            if len < 0 {
                return Some(("nil".into(), next));
            }
            let stop = next + len as usize;
            (buf.len() >= stop + 2).then(|| {
                (
                    String::from_utf8_lossy(&buf[next..stop]).into_owned(),
                    stop + 2,
                )
            })
        }
        b'*' => {
            let n: i64 = line.parse().ok()?;
            if n < 0 {
                return Some(("nil".into(), next));
            }
            let mut items = Vec::new();
            let mut pos = next;
            for _ in 0..n {
                let (item, after) = parse_at(buf, pos)?;
                items.push(item);
                pos = after;
            }
            Some((items.join(" "), pos))
        }
        _ => Some((line, next)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_reply_kind() {
        assert_eq!(parse(b"+OK\r\n").as_deref(), Some("OK"));
        assert_eq!(parse(b":42\r\n").as_deref(), Some("42"));
        assert_eq!(parse(b"-ERR x\r\n").as_deref(), Some("ERR x"));
        assert_eq!(parse(b"$-1\r\n").as_deref(), Some("nil"));
        assert_eq!(parse(b"*-1\r\n").as_deref(), Some("nil"));
        assert_eq!(parse(b"$3\r\nabc\r\n").as_deref(), Some("abc"));
        assert_eq!(parse(b"$3\r\nab"), None);
        assert_eq!(parse(b"+O"), None);
        assert_eq!(parse(b"*2\r\n:1\r\n:0\r\n").as_deref(), Some("1 0"));
        assert_eq!(parse(b"*2\r\n:1\r\n"), None);
    }
}
