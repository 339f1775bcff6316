//! The candidate and observer processes of the failover trials, seen from the parent: started by
//! re-executing loadgen (`--election-child`, as `--processes` re-executes it for its workers), their
//! stdout lines merged into one channel, a candidate killed with SIGKILL by pid (`kill -9`), and
//! every one of them killed by pid when the cast is dropped (an error, Ctrl-C, the run's end). Each
//! child also dies with its parent (`PR_SET_PDEATHSIG`) and sits in its own process group.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::overtakes::now_ns;
pub use crate::procs::piped::Event;
use crate::procs::piped::Piped;

use super::args::Role;

/// One child process.
#[derive(Debug)]
struct Member {
    role: Role,
    /// The process and its pipes (its stdin held open until the child should finish).
    proc: Piped,
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
        let args = ["--election-child", role.name()]
            .into_iter()
            .chain(self.args.iter().map(String::as_str));
        let proc = Piped::spawn(&self.exe, args, i, self.tx.clone())
            .map_err(|e| format!("cannot start an election {}: {e}", role.name()))?;
        self.members.push(Member {
            role,
            proc,
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
        let _ = m.proc.child.start_kill();
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
        self.members[i]
            .proc
            .why(|status| format!("exited ({status})"), "stopped talking")
            .await
    }

    /// Tells every child still running to finish (their stdin closes: a leader resigns) and waits
    /// for them, killing any that has not exited within `within`.
    pub async fn finish(mut self, within: Duration) {
        for m in &mut self.members {
            m.proc.stdin = None;
        }
        for m in &mut self.members {
            if tokio::time::timeout(within, m.proc.child.wait())
                .await
                .is_err()
            {
                let _ = m.proc.child.start_kill();
                let _ = m.proc.child.wait().await;
            }
        }
    }
}

impl Drop for Cast {
    fn drop(&mut self) {
        for m in &mut self.members {
            // SIGKILL by pid; one that already exited is reaped by tokio.
            let _ = m.proc.child.start_kill();
        }
    }
}
