//! Real nodes for the models that run the engine's scripts: a server and a pattern subscription on
//! it ([`Listened`]), so a model sees what each command's script published, in order. After every
//! command a `PING` goes on the subscription: every message published before it reached the server
//! (all of the command's, which ran first) is read before the `PING`'s answer.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use testkit::resp::encode;
use testkit::RedisNode;

/// The messages a command's script published: `(channel, payload)` each.
pub type Published = Vec<(Vec<u8>, Vec<u8>)>;

/// A node and its pattern subscription.
pub struct Listened {
    pub server: RedisNode,
    sub: TcpStream,
    buf: Vec<u8>,
}

impl Listened {
    /// A new node, listening on the channels `pattern` matches (so a `PUBLISH` there reaches a
    /// subscriber).
    pub fn start(pattern: &[u8]) -> Self {
        let server = RedisNode::start();
        let sub = TcpStream::connect(server.addr()).expect("the subscriber connects");
        sub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut node = Self {
            server,
            sub,
            buf: Vec::new(),
        };
        node.sub
            .write_all(&encode(&[b"PSUBSCRIBE", pattern]))
            .unwrap();
        let confirm = node.next_array();
        assert_eq!(confirm[0], b"psubscribe");
        node
    }

    /// `EVAL` of `script` with `keys` and `args`: its answer (as `testkit`'s text), and what it
    /// published.
    pub fn eval(&mut self, script: &str, keys: &[&[u8]], args: &[&[u8]]) -> (String, Published) {
        let count = keys.len().to_string();
        let mut cmd: Vec<&[u8]> = vec![b"EVAL", script.as_bytes(), count.as_bytes()];
        cmd.extend(keys);
        cmd.extend(args);
        let reply = self.server.cmd(&cmd);
        self.sub.write_all(&encode(&[b"PING"])).unwrap();
        let mut published = Vec::new();
        loop {
            let mut m = self.next_array();
            match m[0].as_slice() {
                b"pong" => return (reply, published),
                b"pmessage" => {
                    let payload = m.pop().unwrap();
                    let channel = m.pop().unwrap();
                    published.push((channel, payload));
                }
                other => panic!("subscriber read {:?}", String::from_utf8_lossy(other)),
            }
        }
    }

    /// The string at `key`, if there is one.
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut s = TcpStream::connect(self.server.addr()).unwrap();
        s.write_all(&encode(&[b"GET", key])).unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 256];
        loop {
            let n = s.read(&mut chunk).unwrap();
            assert!(n > 0, "the node closed the connection");
            buf.extend_from_slice(&chunk[..n]);
            if let Some((value, _)) = bulk(&buf, 0) {
                return value;
            }
        }
    }

    /// The next array the subscription reads (its elements' bytes).
    fn next_array(&mut self) -> Vec<Vec<u8>> {
        loop {
            if let Some((items, used)) = array(&self.buf) {
                self.buf.drain(..used);
                return items;
            }
            let mut chunk = [0u8; 4096];
            let n = self.sub.read(&mut chunk).expect("the subscriber reads");
            assert!(n > 0, "the subscriber's connection closed");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// A RESP line at `at`: its text and where the next element starts.
fn line(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let end = at + buf.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
    Some((&buf[at..end], end + 2))
}

/// A bulk string (or nil) at `at`.
fn bulk(buf: &[u8], at: usize) -> Option<(Option<Vec<u8>>, usize)> {
    let (head, next) = line(buf, at)?;
    assert_eq!(head.first(), Some(&b'$'), "a bulk string");
    let len: i64 = std::str::from_utf8(&head[1..]).ok()?.parse().ok()?;
    if len < 0 {
        return Some((None, next));
    }
    let stop = next + len as usize;
    (buf.len() >= stop + 2).then(|| (Some(buf[next..stop].to_vec()), stop + 2))
}

/// An array of bulk strings and integers (what a subscription reads), and its length.
fn array(buf: &[u8]) -> Option<(Vec<Vec<u8>>, usize)> {
    let (head, mut at) = line(buf, 0)?;
    assert_eq!(head.first(), Some(&b'*'), "an array");
    let n: usize = std::str::from_utf8(&head[1..]).ok()?.parse().ok()?;
    let mut items = Vec::with_capacity(n);
    for _ in 0..n {
        if buf.get(at) == Some(&b':') {
            let (int, next) = line(buf, at)?;
            items.push(int[1..].to_vec());
            at = next;
        } else {
            let (item, next) = bulk(buf, at)?;
            items.push(item.unwrap_or_default());
            at = next;
        }
    }
    Some((items, at))
}
