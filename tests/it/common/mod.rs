//! The engine-side helpers of the integration tests: transports, builders and polling. The servers
//! themselves (nodes, clusters, sentinels, the proxy, the hostile server, the clock shim) come from the
//! workspace's test kit (`testkit/`), re-exported here for the tests' short paths.
#![allow(dead_code)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use redlock_engine::{Redlock, Transport};
pub use testkit::{dead_url, free_port, nodes, urls, RedisNode};

/// Every transport the core suite runs against.
pub fn transports() -> Vec<Transport> {
    #[allow(unused_mut)] // only pushed to with the `fred` feature
    let mut all = vec![Transport::Pipeline];
    #[cfg(feature = "fred")]
    all.push(Transport::Fred);
    all
}

/// A builder for nodes this test just started: they hold no lock anyone could lose, so the crashed-node
/// quarantine (which would keep them out for `max_ttl`) is off. `tests/quarantine.rs` turns it on.
pub fn builder() -> redlock_engine::Builder {
    Redlock::builder().quarantine(false)
}

/// The default configuration for nodes this test just started (quarantine off, see [`builder`]).
pub fn fresh_config() -> redlock_engine::Config {
    redlock_engine::Config {
        quarantine: false,
        ..Default::default()
    }
}

/// An engine on `urls` with short retry pauses, for tests.
pub async fn engine(urls: Vec<String>, transport: Transport) -> Redlock {
    builder()
        .nodes(urls)
        .transport(transport)
        .retry(3, Duration::from_millis(5), Duration::from_millis(5))
        .connect_timeout(Duration::from_millis(500))
        .build()
        .await
        .expect("engine builds")
}

/// Polls `check` every 10 ms until it holds or `within` passes.
pub async fn eventually(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + within;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Tries `try_acquire(resource)` every 20 ms until it is granted (`want_grant`) or refused (otherwise),
/// or `within` passes; a grant is released at once, best effort (the node set may stop voting between
/// the two). Whether the wanted outcome came.
pub async fn until_outcome(
    e: &Redlock,
    resource: &[u8],
    want_grant: bool,
    within: Duration,
) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        let granted = match e.lock(resource).ttl(Duration::from_secs(1)).once().await {
            Ok(guard) => {
                let _ = guard.release().await;
                true
            }
            Err(_) => false,
        };
        if granted == want_grant {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// A throwaway CA and a server certificate for 127.0.0.1, made with `openssl` in a temp directory.
/// Returns (directory, CA file, cert file, key file).
pub fn tls_material() -> (
    std::path::PathBuf,
    std::path::PathBuf,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let dir = std::env::temp_dir().join(format!(
        "redlock-tls-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: &[&str]| {
        let status = Command::new("openssl")
            .args(args)
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("openssl is needed for the TLS tests (Debian package openssl)");
        assert!(status.success(), "openssl {args:?} failed");
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=redlock-test-ca",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    (
        dir.clone(),
        dir.join("ca.crt"),
        dir.join("server.crt"),
        dir.join("server.key"),
    )
}

/// Calls of `command` (lower case) this node has served so far (`INFO commandstats`; 0 if never).
pub fn calls(node: &RedisNode, command: &str) -> u64 {
    let stats = node.cmd(&[b"INFO", b"commandstats"]);
    let prefix = format!("cmdstat_{command}:calls=");
    stats
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

/// How many waiters a node queues for the fair lock on `resource` (its holder included).
pub fn fair_queued(node: &RedisNode, resource: &str) -> usize {
    let key = format!("redlock:{{{resource}}}:fair:q");
    node.cmd(&[b"ZCARD", key.as_bytes()]).parse().unwrap()
}

/// Runs the ignored test `test` (its full path in this binary, `module::name`) in a child process of
/// this test binary with `env` set, as a program of its own: its runtime and process end with it.
/// Returns (exit success, stdout and stderr).
pub fn run_child_test(test: &str, env: &[(&str, String)]) -> (bool, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env_remove("RUST_BACKTRACE")
        .args([
            "--exact",
            test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .expect("the test binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}
