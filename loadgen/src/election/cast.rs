//! The candidate and observer processes of the failover trials, seen from the parent: started by
//! re-executing loadgen (`--election-child`, as `--processes` re-executes it for its workers), their
//! stdout lines merged into one channel, a candidate killed with SIGKILL by pid (`kill -9`), and
//! every one of them killed by pid when the cast is dropped (an error, Ctrl-C, the run's end). Each
//! child also dies with its parent (`PR_SET_PDEATHSIG`) and sits in its own process group.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::overtakes::now_ns;

use super::args::Role;

/// What the parent hears from a child.
#[derive(Debug)]
pub enum Event {
    /// One protocol line (see [`super::child`]).
    Line(String),
    /// Its stdout closed: it exited (or was killed).
    Closed,
}

/// One child process.
#[derive(Debug)]
struct Member {
    role: Role,
    child: Child,
    /// Held open: closing it tells the child to finish.
    stdin: Option<ChildStdin>,
    stderr: Option<JoinHandle<String>>,
    killed: bool,
}

/// Every child of a run; killed by pid when dropped.
#[derive(Debug)]
pub struct Cast {
    exe: PathBuf,
    /// The child's options after `--election-child ROLE`.
    args: Vec<String>,
    members: Vec<Member>,
    tx: mpsc::UnboundedSender<(usize, Event)>,
    rx: mpsc::UnboundedReceiver<(usize, Event)>,
}

impl Cast {
    /// A cast whose children take part in election `name` (TTL `ttl`) on `urls`.
    pub fn new(urls: &[String], name: &str, ttl: Duration) -> Result<Self, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find loadgen's own binary: {e}"))?;
        let args = vec![
            "--scenario".into(),
            "election".into(),
            "--nodes".into(),
            urls.join(","),
            "--election-name".into(),
            name.into(),
            "--election-ttl".into(),
            format!("{}ms", ttl.as_millis()),
            "--quiet".into(),
        ];
        let (tx, rx) = mpsc::unbounded_channel();
        Ok(Self {
            exe,
            args,
            members: Vec::new(),
            tx,
            rx,
        })
    }

    /// Starts a child of `role`; its index.
    pub fn spawn(&mut self, role: Role) -> Result<usize, String> {
        let i = self.members.len();
        let mut cmd = Command::new(&self.exe);
        cmd.arg("--election-child")
            .arg(role.name())
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        testkit::die_with_parent(cmd.as_std_mut());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start an election {}: {e}", role.name()))?;
        let (stdin, stdout, stderr) = (
            child.stdin.take().expect("piped"),
            child.stdout.take().expect("piped"),
            child.stderr.take().expect("piped"),
        );
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send((i, Event::Line(line))).is_err() {
                    return;
                }
            }
            let _ = tx.send((i, Event::Closed));
        });
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = BufReader::new(stderr).read_to_string(&mut text).await;
            text
        });
        self.members.push(Member {
            role,
            child,
            stdin: Some(stdin),
            stderr: Some(stderr),
            killed: false,
        });
        Ok(i)
    }

    /// The next line or exit of any child (`None` never comes while the cast lives: it holds a
    /// sender itself).
    pub async fn next(&mut self) -> Option<(usize, Event)> {
        self.rx.recv().await
    }

    /// `kill -9` of child `i`; the instant (ns on `CLOCK_MONOTONIC`) just before the signal.
    pub fn kill(&mut self, i: usize) -> u64 {
        let m = &mut self.members[i];
        m.killed = true;
        let at = now_ns();
        let _ = m.child.start_kill();
        at
    }

    /// The role of child `i`.
    pub fn role(&self, i: usize) -> Role {
        self.members[i].role
    }

    /// Whether child `i` was killed by [`kill`](Self::kill).
    pub fn killed(&self, i: usize) -> bool {
        self.members[i].killed
    }

    /// Children of `role` not killed.
    pub fn alive(&self, role: Role) -> impl Iterator<Item = usize> + '_ {
        self.members
            .iter()
            .enumerate()
            .filter(move |(_, m)| m.role == role && !m.killed)
            .map(|(i, _)| i)
    }

    /// Why child `i` exited: its last stderr line, or its exit status.
    pub async fn why(&mut self, i: usize) -> String {
        let m = &mut self.members[i];
        let status = tokio::time::timeout(Duration::from_secs(5), m.child.wait()).await;
        let text = match m.stderr.take() {
            Some(h) => tokio::time::timeout(Duration::from_secs(2), h)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default(),
            None => String::new(),
        };
        let line = text
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| l.trim_start_matches("loadgen: error: ").to_string());
        match (line, status) {
            (Some(line), _) => line,
            (None, Ok(Ok(status))) => format!("exited ({status})"),
            _ => "stopped talking".into(),
        }
    }

    /// Tells every child still running to finish (their stdin closes: a leader resigns) and waits
    /// for them, killing any that has not exited within `within`.
    pub async fn finish(mut self, within: Duration) {
        for m in &mut self.members {
            m.stdin = None;
        }
        for m in &mut self.members {
            if tokio::time::timeout(within, m.child.wait()).await.is_err() {
                let _ = m.child.start_kill();
                let _ = m.child.wait().await;
            }
        }
    }
}

impl Drop for Cast {
    fn drop(&mut self) {
        for m in &mut self.members {
            // SIGKILL by pid; one that already exited is reaped by tokio.
            let _ = m.child.start_kill();
        }
    }
}
