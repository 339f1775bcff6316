//! Real `redis-server` processes on free loopback ports (stopped by pid on drop) and the built
//! `redlock` binary, for the CLI's tests.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub struct Node {
    pub port: u16,
    child: Child,
}

impl Node {
    pub fn start(extra: &[&str]) -> Self {
        for _ in 0..20 {
            let port = free_port();
            let child = Command::new("redis-server")
                .args([
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                ])
                .args(["--appendonly", "no", "--protected-mode", "no"])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server (run through scripts/with-redis, which installs it)");
            let mut node = Self { port, child };
            let until = Instant::now() + Duration::from_secs(5);
            while Instant::now() < until {
                if matches!(node.child.try_wait(), Ok(Some(_))) {
                    break;
                }
                if node.try_cmd(&["PING"]).is_some() {
                    return node;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = node.child.kill();
        }
        panic!("no redis-server started");
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// One command on a fresh connection; the reply's first line (a bulk string's content).
    pub fn cmd(&self, args: &[&str]) -> String {
        self.try_cmd(args).expect("node answers")
    }

    fn try_cmd(&self, args: &[&str]) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        let mut req = format!("*{}\r\n", args.len());
        for a in args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(req.as_bytes()).ok()?;
        let mut buf = [0u8; 4096];
        let n = s.read(&mut buf).ok()?;
        let text = String::from_utf8_lossy(&buf[..n]).into_owned();
        let mut lines = text.split("\r\n");
        let first = lines.next()?;
        Some(match first.as_bytes().first()? {
            b'$' if first == "$-1" => "nil".into(),
            b'$' => lines.next()?.to_string(),
            _ => first[1..].to_string(),
        })
    }

    pub fn exists(&self, key: &str) -> bool {
        self.cmd(&["EXISTS", key]) == "1"
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn nodes(n: usize) -> Vec<Node> {
    (0..n).map(|_| Node::start(&[])).collect()
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn urls(nodes: &[Node]) -> String {
    nodes.iter().map(Node::url).collect::<Vec<_>>().join(",")
}

/// The `redlock` binary with `--nodes` set (and nothing inherited from REDLOCK_NODES).
pub fn redlock(nodes: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_redlock"));
    cmd.env_remove("REDLOCK_NODES").args(["--nodes", nodes]);
    cmd
}

/// Runs it to the end: (exit code, stdout, stderr).
pub fn run(cmd: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.stdin(Stdio::null()).output().expect("redlock runs");
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// Polls `check` every 10 ms until it holds or `within` passes.
pub fn eventually(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    check()
}
