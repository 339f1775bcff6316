//! Child processes that cannot outlive their scenario: [`Proc`] kills by pid when dropped (SIGCONT first,
//! so a stopped process dies at once), and every child gets `PR_SET_PDEATHSIG` (`testkit::die_with_parent`,
//! as the kit's nodes do), so even a `kill -9` of the orchestrator takes its redis-servers and clients
//! with it. The orchestrator spawns every child from its main thread (a current-thread runtime), so
//! "when the spawning thread exits" means "when the orchestrator dies".

use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

use testkit::signal;

/// A running child, killed (by pid) when dropped.
#[derive(Debug)]
pub struct Proc {
    name: String,
    child: Option<Child>,
}

impl Proc {
    /// Spawns `cmd`; the child is killed if this process dies.
    pub fn spawn(name: impl Into<String>, mut cmd: Command) -> std::io::Result<Self> {
        testkit::die_with_parent(&mut cmd);
        let child = cmd.spawn()?;
        Ok(Self {
            name: name.into(),
            child: Some(child),
        })
    }

    /// Name given at spawn, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pid, while the process has not been reaped.
    pub fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.id() as i32)
    }

    /// SIGSTOP: the process freezes in place; its sockets stay open.
    pub fn stop(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// SIGCONT.
    pub fn cont(&self) {
        self.signal(libc::SIGCONT);
    }

    fn signal(&self, sig: i32) {
        if let Some(pid) = self.pid() {
            signal::send(pid, sig);
        }
    }

    /// The exit status if the process has exited (reaping it), `None` while it runs.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        self.child = None;
        Some(status)
    }

    /// Waits up to `within` for the process to exit on its own (polling, so the runtime keeps serving
    /// the proxies meanwhile); kills it if it does not. Returns its status, `None` if it had to be killed.
    pub async fn wait_or_kill(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            if let Some(status) = self.try_wait() {
                return Some(status);
            }
            self.child.as_ref()?; // already reaped
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.kill();
        None
    }

    /// SIGCONT, SIGKILL, reap. Idempotent.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal::send(child.id() as i32, libc::SIGCONT);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Live (non-zombie) children of this process, as `pid name`: the leak check run after every scenario.
pub fn live_children() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may contain spaces, so split after the last ')'.
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let name = stat[stat.find('(').map_or(0, |i| i + 1)..close].to_string();
        let mut rest = stat[close + 1..].split_whitespace();
        let state = rest.next().unwrap_or("");
        let ppid = rest.next().unwrap_or("");
        if ppid == me && state != "Z" {
            found.push(format!("{pid} {name}"));
        }
    }
    found
}
