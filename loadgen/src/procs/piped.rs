//! A re-executed loadgen child seen from its parent, whatever it runs (a `--processes` worker, an
//! election's candidate or observer): started with piped stdio in its own process group, dying with
//! its parent; its stdout lines sent into the parent's one channel, its stderr kept for [`Piped::why`].

use std::ffi::OsStr;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// What the parent hears from a child.
#[derive(Debug)]
pub enum Event {
    /// One line of its stdout.
    Line(String),
    /// Its stdout closed: it exited (or was killed, or is about to exit).
    Closed,
}

/// One child process.
#[derive(Debug)]
pub struct Piped {
    /// The process (killed when dropped).
    pub child: Child,
    /// Held open: closing it (`None`) tells the child to finish.
    pub stdin: Option<ChildStdin>,
    /// Everything it wrote on stderr, once it closed; taken by [`Piped::why`].
    pub stderr: Option<JoinHandle<String>>,
}

impl Piped {
    /// Starts `exe` with `args` as child `i`; its stdout lines and then its [`Event::Closed`] go to
    /// `tx`, tagged `i`.
    pub fn spawn<I, S>(
        exe: &Path,
        args: I,
        i: usize,
        tx: mpsc::UnboundedSender<(usize, Event)>,
    ) -> std::io::Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(exe);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            // Its own group: a terminal's Ctrl-C reaches the parent only, which stops it.
            .process_group(0);
        testkit::die_with_parent(cmd.as_std_mut());
        let mut child = cmd.spawn()?;
        let (stdin, stdout, stderr) = (
            child.stdin.take().expect("piped"),
            child.stdout.take().expect("piped"),
            child.stderr.take().expect("piped"),
        );
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
        Ok(Self {
            child,
            stdin: Some(stdin),
            stderr: Some(stderr),
        })
    }

    /// Why the child exited: its last stderr line (an error it printed), else `exited(status)`, else
    /// `silent` when it has not exited within 5 s. Each caller words the last two its own way.
    pub async fn why(&mut self, exited: impl FnOnce(ExitStatus) -> String, silent: &str) -> String {
        let status = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        let text = match self.stderr.take() {
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
            (None, Ok(Ok(status))) => exited(status),
            _ => silent.into(),
        }
    }
}
