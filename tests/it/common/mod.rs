//! The engine-side helpers of the integration tests: transports, builders and polling. The servers
//! themselves (nodes, clusters, sentinels, the proxy, the hostile server, the clock shim) come from the
//! workspace's test kit (`testkit/`), re-exported here for the tests' short paths.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use redlock_engine::{
    Builder, Config, Lock, LockError, LockGuard, LockRequest, Redlock, Transport,
};
use testkit::Proxy;
pub use testkit::{dead_url, free_port, nodes, urls, RedisCluster, RedisNode};

pub mod acl;
mod skip;
pub(crate) use skip::{skip_unless, this_test};

/// Every transport the core suite runs against.
pub fn transports() -> Vec<Transport> {
    #[allow(unused_mut)] // only pushed to with the `fred` feature
    let mut all = vec![Transport::Pipeline];
    #[cfg(feature = "fred")]
    all.push(Transport::Fred);
    all
}

/// Two fresh standalone masters beside the node set at `url` (a cluster's or a sentinel set's), and
/// the URLs of all three, `url` first: the mixed set the cluster and sentinel tests vote on.
pub fn beside_standalone(url: String) -> (Vec<RedisNode>, Vec<String>) {
    let standalone = nodes(2);
    let mut set = vec![url];
    set.extend(urls(&standalone));
    (standalone, set)
}

/// A builder for nodes this test just started: they hold no lock anyone could lose, so the crashed-node
/// quarantine (which would keep them out for `max_ttl`) is off. `tests/quarantine.rs` turns it on.
pub fn builder() -> redlock_engine::Builder {
    Redlock::builder().quarantine(false)
}

/// The default configuration on `urls`, nodes this test just started (quarantine off, see
/// [`builder`]).
pub fn fresh_config(urls: Vec<String>) -> Config {
    Config {
        nodes: urls,
        quarantine: false,
        ..Default::default()
    }
}

/// An engine with the default configuration on `urls` (see [`fresh_config`]).
pub async fn fresh_engine(urls: Vec<String>) -> Redlock {
    Redlock::new(fresh_config(urls))
        .await
        .expect("engine builds")
}

/// `n` fresh nodes and `N` engines with the default configuration on them (see [`fresh_engine`]):
/// the setup of most single-transport tests, a holder and the owners that contend with it.
pub async fn fresh_nodes<const N: usize>(n: usize) -> (Vec<RedisNode>, [Redlock; N]) {
    let cluster = nodes(n);
    let mut engines = Vec::with_capacity(N);
    for _ in 0..N {
        engines.push(fresh_engine(urls(&cluster)).await);
    }
    (cluster, into_array(engines))
}

/// `n` fresh nodes and `N` engines on them with short retry pauses on the default transport (see
/// [`engine`]): the setup of the single-transport tests that contend.
pub async fn quick_nodes<const N: usize>(n: usize) -> (Vec<RedisNode>, [Redlock; N]) {
    let cluster = nodes(n);
    let mut engines = Vec::with_capacity(N);
    for _ in 0..N {
        engines.push(engine(urls(&cluster), Transport::default()).await);
    }
    (cluster, into_array(engines))
}

/// `engines` as an array of its length (the callers build exactly `N`).
fn into_array<const N: usize>(engines: Vec<Redlock>) -> [Redlock; N] {
    engines
        .try_into()
        .unwrap_or_else(|v: Vec<Redlock>| panic!("{} engines, not {N}", v.len()))
}

/// Runs `test` once for each transport of [`transports`], with `N` engines on `urls` built for it
/// (see [`engine`]): the loop most of the suite's tests are, written once. A transport's engines are
/// built when its turn comes and dropped when it ends, as in a `for` loop.
pub async fn each_transport<const N: usize>(
    urls: Vec<String>,
    mut test: impl AsyncFnMut(Transport, [Redlock; N]),
) {
    for transport in transports() {
        let mut engines = Vec::with_capacity(N);
        for _ in 0..N {
            engines.push(engine(urls.clone(), transport).await);
        }
        test(transport, into_array(engines)).await;
    }
}

/// A builder for `urls` (quarantine off, see [`builder`]) that retries a busy lock `retries` times
/// 5 ms apart and gives up a connect after 500 ms: a test's failures come back quickly.
pub fn quick(urls: impl IntoIterator<Item = String>, retries: u32) -> Builder {
    builder()
        .nodes(urls)
        .retry(retries, Duration::from_millis(5), Duration::from_millis(5))
        .connect_timeout(Duration::from_millis(500))
}

/// A [`quick`] builder with one round per call and the crashed-node quarantine on: a node younger
/// than `max_ttl` (restarted, failed over) does not vote.
pub fn guarded(urls: impl IntoIterator<Item = String>, max_ttl: Duration) -> Builder {
    quick(urls, 0).quarantine(true).max_ttl(max_ttl)
}

/// The engine `builder` builds.
///
/// # Panics
/// If it does not build: the test's setup is wrong.
pub async fn build(builder: Builder) -> Redlock {
    builder.build().await.expect("engine builds")
}

/// An engine on `urls` with short retry pauses, for tests.
pub async fn engine(urls: Vec<String>, transport: Transport) -> Redlock {
    build(quick(urls, 3).transport(transport)).await
}

/// An engine on `nodes` (quarantine off, see [`builder`]) with what `tune` sets on the builder.
pub async fn engine_with(nodes: &[RedisNode], tune: impl FnOnce(Builder) -> Builder) -> Redlock {
    build(tune(builder().nodes(urls(nodes)))).await
}

/// An engine on `nodes` (see [`engine_with`]) retrying `retries` times, 5 ms apart: owners that
/// wait for each other's locks see them freed at once.
pub async fn retrying(nodes: &[RedisNode], retries: u32) -> Redlock {
    engine_with(nodes, |b| {
        b.retry(retries, Duration::from_millis(5), Duration::from_millis(5))
    })
    .await
}

/// One attempt at `request` for `ttl`, as a bare [`Lock`]: the test releases it with
/// `Redlock::release` (or leaves it held), not a guard dropped at the end of a statement.
pub async fn attempt(request: LockRequest<'_>, ttl: Duration) -> Result<Lock, LockError> {
    request.ttl(ttl).once().await.map(LockGuard::into_lock)
}

/// Whether every node of `nodes` has `key` within `within` (a write that returned at the majority
/// may still be on its way to the others).
pub async fn everywhere(nodes: &[RedisNode], key: &[u8], within: Duration) -> bool {
    eventually(within, || nodes.iter().all(|n| n.exists(key))).await
}

/// Whether no node of `nodes` has `key` within `within`.
pub async fn nowhere(nodes: &[RedisNode], key: &[u8], within: Duration) -> bool {
    eventually(within, || nodes.iter().all(|n| !n.exists(key))).await
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

/// A proxy in front of each of `nodes` that delays every chunk by `delay` each way (a slow link).
pub async fn delayed_proxies(nodes: &[RedisNode], delay: Duration) -> Vec<Proxy> {
    let mut proxies = Vec::with_capacity(nodes.len());
    for node in nodes {
        proxies.push(Proxy::delayed(node.port, delay).await);
    }
    proxies
}

/// How long `waiter` (another engine) waits for `resource` behind `holder`: `holder` takes it for
/// `ttl`, `waiter` asks for it (and releases what it gets), and `holder` releases it 300 ms later,
/// long enough for the waiter to lose its first round, mark itself and subscribe. A waiter woken by
/// the release gets it at once; one that was not, at the end of its retry pause.
pub async fn waited_behind(
    holder: &Redlock,
    waiter: Redlock,
    resource: &str,
    ttl: Duration,
) -> Duration {
    let lock = holder.acquire(resource.as_bytes(), ttl).await.unwrap();
    let r = resource.to_string();
    let waiting = tokio::spawn(async move {
        let started = Instant::now();
        let lock = waiter.acquire(r.as_bytes(), ttl).await.unwrap();
        let waited = started.elapsed();
        waiter.release(lock).await.unwrap();
        waited
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    holder.release(lock).await.unwrap();
    waiting.await.unwrap()
}

/// Starts moving `slot` from master `source` to master `target` and moves every key it has: the slot
/// is left migrating, its keys on the target. Call from a multi-threaded runtime: the kit blocks.
pub fn migrate_every_key(cluster: &RedisCluster, slot: u16, source: usize, target: usize) {
    tokio::task::block_in_place(|| {
        cluster.begin_migration(slot, source, target);
        while cluster.migrate_keys(slot, source, target, 16) > 0 {}
    });
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

/// A TLS-only node (no plain-text port at all) serving a certificate of a throwaway CA (see
/// [`tls_material`]). Returns (node, CA file, directory: the node's files, kept while it runs).
pub fn tls_node() -> (RedisNode, PathBuf, PathBuf) {
    let (dir, ca, cert, key) = tls_material();
    let node = RedisNode::start_tls_only(&[
        "--tls-cert-file",
        &cert.to_string_lossy(),
        "--tls-key-file",
        &key.to_string_lossy(),
        "--tls-ca-cert-file",
        &ca.to_string_lossy(),
        "--tls-auth-clients",
        "no",
    ]);
    (node, ca, dir)
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
