//! [`Env`]: what one scenario runs on — five lock nodes, a storage node for the counters, optional
//! proxies, and client processes — and its teardown. Dropping an `Env` kills every process it started.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::checker::Logs;
use crate::client::{ClientArgs, LockMode};
use crate::procs::Proc;
use testkit::{NodeSpec, Proxy, RedisNode};

/// Lock nodes per scenario.
pub const NODES: usize = 5;
/// TTL of the background clients' locks.
pub const TTL_MS: u64 = 1000;
/// Per-node deadline of the background clients.
pub const NODE_TIMEOUT_MS: u64 = 50;
/// The resources the background clients contend on: few, so contention is heavy.
pub const RESOURCES: [&str; 4] = ["r0", "r1", "r2", "r3"];

/// Suite-wide settings, from the command line.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// CI mode: a few seconds per scenario.
    pub short: bool,
    /// Length of one phase of a scenario's fault timeline.
    pub phase: Duration,
    /// Grants each scenario waits for before stopping its clients (0 in short mode).
    pub target_grants: usize,
    /// Bound on that wait.
    pub target_cap: Duration,
    /// Scenario 7 expects the engine to quarantine restarted nodes (0 overlaps) instead of showing one.
    pub expect_quarantine: bool,
    /// libfaketime's path, or why scenario 10 cannot run.
    pub faketime: Result<PathBuf, String>,
    /// The node clock shim's path, or why scenario 16 cannot run (and scenario 20 steps no clock).
    pub clockshim: Result<PathBuf, testkit::clock::ShimError>,
    /// This binary, re-executed as `chaos client`.
    pub exe: PathBuf,
    /// Where each scenario's logs go (one subdirectory per scenario).
    pub logs: PathBuf,
    /// Test hook: each scenario panics once its processes run, to prove the teardown.
    pub inject_panic: bool,
}

/// One scenario's processes.
#[derive(Debug)]
pub struct Env {
    /// Log directory of this scenario.
    pub dir: PathBuf,
    /// The lock nodes.
    pub nodes: Vec<RedisNode>,
    /// The node holding the lost-update counters; never faulted.
    pub storage: RedisNode,
    /// One proxy per lock node, once [`Env::start_proxies`] ran.
    pub proxies: Vec<Proxy>,
    clients: Vec<Proc>,
    /// Clients killed on purpose ([`Env::kill_client`]): [`Env::finish`] does not wait for them.
    killed: Vec<usize>,
    stop_file: PathBuf,
    exe: PathBuf,
    max_secs: u64,
}

impl Env {
    /// Starts the nodes of scenario `name`, with a fresh log directory.
    pub fn start(ctx: &Ctx, name: &str) -> Result<Self, String> {
        let dir = ctx.logs.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Self {
            stop_file: dir.join("STOP"),
            nodes: (0..NODES).map(|_| start_node()).collect(),
            storage: start_node(),
            proxies: Vec::new(),
            clients: Vec::new(),
            killed: Vec::new(),
            exe: ctx.exe.clone(),
            // The clients' own hard stop: well past anything a scenario waits for.
            max_secs: ctx.target_cap.as_secs() + 120,
            dir,
        })
    }

    /// Puts a proxy in front of every lock node.
    pub async fn start_proxies(&mut self) -> Result<(), String> {
        for node in &self.nodes {
            let proxy = Proxy::start(node.port)
                .await
                .map_err(|e| format!("proxy: {e}"))?;
            self.proxies.push(proxy);
        }
        Ok(())
    }

    /// URLs of the lock nodes, direct.
    pub fn node_urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisNode::url).collect()
    }

    /// URLs of the proxies.
    pub fn proxy_urls(&self) -> Vec<String> {
        self.proxies.iter().map(Proxy::url).collect()
    }

    /// The background client's options: heavy contention on [`RESOURCES`] with the counter.
    pub fn client_args(&self, id: &str) -> ClientArgs {
        ClientArgs {
            id: id.to_string(),
            nodes: self.node_urls(),
            storage: Some(self.storage.port),
            resources: RESOURCES.iter().map(|r| r.to_string()).collect(),
            lock: LockMode::Exclusive,
            retries: 0,
            write_ratio: 0.25,
            linger_every: 0,
            tasks: 4,
            load_tasks: 0,
            load_resources: Vec::new(),
            max_in_flight: None,
            ttl_ms: TTL_MS,
            node_timeout_ms: NODE_TIMEOUT_MS,
            min_validity: 0.1,
            cs_sleep_us: 1000,
            extend_every: 8,
            pause_us: 3000,
            max_secs: self.max_secs,
            stop_file: self.stop_file.clone(),
            log: self.dir.join(format!("{id}.log")),
            wall_samples: false,
            quarantine: false,
            max_ttl_ms: None,
            no_clock_guard: false,
            permits: 0,
            acquire_timeout_ms: None,
            unordered: false,
        }
    }

    /// Starts a client process with `args` and extra environment variables; returns its index.
    pub fn spawn(&mut self, args: &ClientArgs, vars: &[(&str, String)]) -> Result<usize, String> {
        let err = std::fs::File::create(self.dir.join(format!("{}.err", args.id)))
            .map_err(|e| format!("client stderr: {e}"))?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg("client")
            .args(args.argv())
            .envs(vars.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err);
        let proc = Proc::spawn(format!("client {}", args.id), cmd)
            .map_err(|e| format!("spawn {}: {e}", self.exe.display()))?;
        self.clients.push(proc);
        Ok(self.clients.len() - 1)
    }

    /// Starts `n` background clients `c0..c{n-1}`.
    pub fn spawn_background(&mut self, n: usize) -> Result<(), String> {
        for i in 0..n {
            let args = self.client_args(&format!("c{i}"));
            self.spawn(&args, &[])?;
        }
        Ok(())
    }

    /// Client process number `index`.
    pub fn client(&self, index: usize) -> &Proc {
        &self.clients[index]
    }

    /// `kill -9` of client process number `index`, a crash: nothing of it runs afterwards, and
    /// [`Env::finish`] does not count it as a client that failed to stop.
    pub fn kill_client(&mut self, index: usize) {
        self.clients[index].kill();
        self.killed.push(index);
    }

    /// Grants logged so far by the clients whose id `counts`.
    pub fn grants_so_far(&self, counts: impl Fn(&str) -> bool) -> usize {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        dir.flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .filter(|p| {
                p.file_stem()
                    .is_some_and(|id| counts(&id.to_string_lossy()))
            })
            .filter_map(|p| std::fs::read(p).ok())
            .map(|bytes| {
                bytes
                    .split(|&b| b == b'\n')
                    .filter(|l| l.first() == Some(&b'G'))
                    .count()
            })
            .sum()
    }

    /// Keeps the clients running until the suite's grant target is met (bounded by its cap).
    pub async fn top_up(&self, ctx: &Ctx) {
        self.top_up_of(ctx, |_| true).await;
    }

    /// [`Env::top_up`], counting only the grants of the clients whose id `counts` (a scenario's
    /// control clients, judged apart, must not make up its target).
    pub async fn top_up_of(&self, ctx: &Ctx, counts: impl Fn(&str) -> bool) {
        let until = tokio::time::Instant::now() + ctx.target_cap;
        while self.grants_so_far(&counts) < ctx.target_grants && tokio::time::Instant::now() < until
        {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Stops every client (stop file, then kill after a grace period) and reads the logs. Errors if a
    /// client had to be killed or exited with a failure.
    pub async fn finish(&mut self) -> Result<Logs, String> {
        std::fs::write(&self.stop_file, b"").map_err(|e| format!("stop file: {e}"))?;
        let mut problems = Vec::new();
        // A client finishes its current round first: at most one critical section plus a release.
        let grace = Duration::from_millis(TTL_MS) + Duration::from_secs(5);
        for (i, client) in self.clients.iter_mut().enumerate() {
            if self.killed.contains(&i) {
                continue;
            }
            match client.wait_or_kill(grace).await {
                Some(status) if status.success() => {}
                Some(status) => problems.push(format!("{} exited with {status}", client.name())),
                None => problems.push(format!("{} did not stop; killed", client.name())),
            }
        }
        self.clients.clear();
        self.killed.clear();
        if !problems.is_empty() {
            return Err(format!(
                "{} (stderr in {})",
                problems.join("; "),
                self.dir.display()
            ));
        }
        Logs::read_dir(&self.dir).map_err(|e| format!("reading logs: {e}"))
    }

    /// The counters on the storage node, for the resources in `expected`.
    pub fn counters(&self, expected: &BTreeMap<String, i64>) -> BTreeMap<String, i64> {
        expected
            .keys()
            .map(|r| {
                let key = crate::counter::counter_key(r);
                let value = self.storage.cmd(&[b"GET", key.as_bytes()]);
                (r.clone(), value.parse().unwrap_or(0))
            })
            .collect()
    }

    /// Runs `args` on every lock node; panics if one does not answer.
    pub fn on_all_nodes(&self, args: &[&[u8]]) -> Vec<String> {
        self.nodes.iter().map(|n| n.cmd(args)).collect()
    }
}

/// Starts one lock or storage node (the kit's, with `PR_SET_PDEATHSIG`: the orchestrator starts every
/// node from its main thread, so a `kill -9` of the orchestrator takes its nodes with it).
pub fn start_node() -> RedisNode {
    RedisNode::start_spec(NodeSpec::default().tied())
}
