//! The built `redlock` binary, for the CLI's tests; the real `redis-server` processes on free loopback
//! ports (stopped by pid on drop) come from the workspace's test kit (`testkit/`). Also: a background
//! run that cannot outlive its test ([`Bg`]), and the pids a command under test writes ([`Pids`]).
#![allow(dead_code, unused_imports)]

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

pub use testkit::{free_port, nodes, RedisNode, TempDir};

/// Their URLs as one `--nodes` list.
pub fn urls(nodes: &[RedisNode]) -> String {
    testkit::urls(nodes).join(",")
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

/// `redlock ... acquire`'s usual head: quarantine off (the nodes are seconds old), then the
/// subcommand and resource.
pub fn acquire(nodes: &[RedisNode], resource: &str) -> Command {
    let mut cmd = redlock(&urls(nodes));
    cmd.args(["--no-quarantine", "acquire", resource]);
    cmd
}

/// A child running in the background, killed and reaped if the test ends (or fails) first.
pub struct Bg(Option<Child>);

impl Bg {
    pub fn spawn(cmd: &mut Command) -> Self {
        Self(Some(
            cmd.stdin(Stdio::null()).spawn().expect("redlock starts"),
        ))
    }

    /// Its stdout and stderr captured, for [`Bg::output`].
    pub fn spawn_piped(cmd: &mut Command) -> Self {
        Self::spawn(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()))
    }

    pub fn pid(&self) -> i32 {
        self.0.as_ref().unwrap().id() as i32
    }

    /// Sends it `sig`.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) has no memory-safety preconditions; the pid is our unreaped child.
        assert_eq!(unsafe { libc::kill(self.pid(), sig) }, 0);
    }

    pub fn wait(mut self) -> ExitStatus {
        self.0.take().unwrap().wait().unwrap()
    }

    /// (exit code, stdout, stderr) of a [`Bg::spawn_piped`] child.
    pub fn output(mut self) -> (i32, String, String) {
        let out = self.0.take().unwrap().wait_with_output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Whether it is still running (a later [`Bg::wait`] still gets its status).
    pub fn running(&mut self) -> bool {
        self.0.as_mut().unwrap().try_wait().unwrap().is_none()
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Files in a directory of the test's own where a command under test writes a pid (`echo $! > F`)
/// or a mark; whatever pid was written is SIGKILLed when the test ends.
pub struct Pids(TempDir);

impl Pids {
    pub fn new() -> Self {
        Self(TempDir::new("cli"))
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    /// A shell script that starts `worker` in the background, writes its pid to the file `worker`
    /// (for [`Pids::read`]) and waits for it: a command with a child of its own, whose stop the
    /// tests check.
    pub fn worker_script(&self, worker: &str) -> String {
        format!(
            "{worker} & echo $! > {}; wait",
            self.path("worker").display()
        )
    }

    /// The pid written to `name`, once it is there.
    pub fn read(&self, name: &str) -> i32 {
        let path = self.path(name);
        let mut pid = None;
        assert!(
            eventually(Duration::from_secs(5), || {
                pid = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|t| t.trim().parse().ok());
                pid.is_some()
            }),
            "no pid in {}",
            path.display()
        );
        pid.unwrap()
    }
}

impl Drop for Pids {
    fn drop(&mut self) {
        for entry in std::fs::read_dir(self.0.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let pid = std::fs::read_to_string(entry.path()).unwrap_or_default();
            if let Ok(pid) = pid.trim().parse::<i32>() {
                if alive(pid) {
                    // SAFETY: kill(2) has no memory-safety preconditions; a pid our command wrote.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
        }
    }
}

/// Whether `pid` is a live process: it exists and is not a zombie (one nobody reaped is gone all
/// the same).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) S ...`: the state follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// On how many of `nodes` `key` exists.
pub fn held_on(nodes: &[RedisNode], key: &str) -> usize {
    nodes.iter().filter(|n| n.exists(key.as_bytes())).count()
}

/// A shared holder of `resource`'s read-write lock running `sleep secs` in the background, once
/// its reader entry is on every node: the reader a writer test then waits behind.
pub fn reader_holding(nodes: &[RedisNode], resource: &str, secs: &str) -> Bg {
    let reader = Bg::spawn(acquire(nodes, resource).args(["--shared", "--", "sleep", secs]));
    let readers = format!("redlock:{{{resource}}}:rw:readers");
    assert!(soon_held_on(nodes, &readers, nodes.len()));
    reader
}

/// Whether `key` is on at least `at_least` of `nodes` within 3 s: a command's lock is granted by a
/// majority, and the last nodes' writes may still be on their way.
pub fn soon_held_on(nodes: &[RedisNode], key: &str, at_least: usize) -> bool {
    eventually(Duration::from_secs(3), || held_on(nodes, key) >= at_least)
}

/// `redlock release --force --yes RESOURCE` on `nodes`: an operator taking a command's lock away
/// under it; the release itself must succeed.
pub fn force_release(nodes: &[RedisNode], resource: &str) {
    let mut cmd = redlock(&urls(nodes));
    cmd.args(["--no-quarantine", "release", "--force", "--yes", resource]);
    let (code, _, err) = run(&mut cmd);
    assert_eq!(code, 0, "{err}");
}
