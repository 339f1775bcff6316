//! `ceiling`: what the Redis side can do at all, measured with redis-benchmark driving every node at
//! once, `-P 16`: first `SET key value NX PX ttl` (random keys), then `EVALSHA` of the engine's own
//! compare-and-delete script on the same key space (loaded first with `SCRIPT LOAD`).
//!
//! Cycles/s = 1 / (1/acquire_rate + 1/release_rate), where each rate is the ops/s summed over the nodes
//! divided by N: one lock cycle costs one SET and one script call on every node.
//!
//! When every node accepts `DELIFEQ` (Valkey 9: probed with `DELIFEQ` on a key that does not exist,
//! which answers `0`; other servers answer an unknown-command error), the native ceiling too: a `SET NX
//! PX` round that puts the keys back (not counted), then `DELIFEQ key value` on the same key space;
//! native cycles/s takes the first SET round's rate with the `DELIFEQ` rate, so it differs from
//! cycles/s by the release command alone. `cycles_per_s` keeps its meaning (the script release).

use std::process::Stdio;
use std::time::Duration;

use redlock_engine::__private::scripts;
use tokio::process::Command;

use crate::nodes::addr::NodeUrl;
use crate::nodes::probe::{Conn, Reply};

/// Pipeline depth per redis-benchmark connection.
pub const PIPELINE: usize = 16;
/// redis-benchmark connections per node: 4 x 16 = 64 requests in flight per node, as many as 64 workers
/// put there. On 2 cores more clients measure *less* (the benchmark processes compete with the servers:
/// -c 64 gave half the rate of -c 2..16 in results/README.md's sweep), so this is not scaled per scenario.
pub const CLIENTS: usize = 4;
/// Random key space of the benchmark (`-r`).
const KEYSPACE: u64 = 100_000;
/// Requests per node of the calibration round that sizes the measured rounds.
const CALIBRATION: u64 = 10_000;

/// The ceiling of one scenario.
#[derive(Debug, Clone)]
pub struct Ceiling {
    /// Lock cycles per second the nodes could serve.
    pub cycles_per_s: f64,
    /// SET NX PX ops/s summed over the nodes.
    pub set_ops_per_s: f64,
    /// Release-script ops/s summed over the nodes.
    pub release_ops_per_s: f64,
    /// Connections per node (`-c`).
    pub clients: usize,
    /// Wall time of the measured SET and script rounds (not the native ones).
    pub elapsed: Duration,
    /// The native ceiling (`SET NX PX`, then `DELIFEQ`), when every node accepts `DELIFEQ`.
    pub native: Option<NativeCeiling>,
}

/// The ceiling with the native release, `DELIFEQ key value`, in place of the script.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NativeCeiling {
    /// Lock cycles per second: the SET rate of [`Ceiling`] with the `DELIFEQ` rate.
    pub cycles_per_s: f64,
    /// `DELIFEQ` ops/s summed over the nodes.
    pub delifeq_ops_per_s: f64,
}

/// Whether redis-benchmark can be run.
pub fn available() -> bool {
    std::process::Command::new("redis-benchmark")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Measures the ceiling with [`CLIENTS`] connections per node, each measured round lasting about `round`.
pub async fn measure(nodes: &[NodeUrl], ttl: Duration, round: Duration) -> Result<Ceiling, String> {
    if !available() {
        return Err("engine ceiling needs redis-benchmark: install it with `apt-get install -y redis-tools`".into());
    }
    if let Some(node) = nodes.iter().find(|n| !n.is_standalone()) {
        // redis-benchmark drives one server per node; app.rs keeps the ceiling off other node sets.
        return Err(format!(
            "ceiling: node {} is {}, not a standalone master",
            node.url,
            node.kind()
        ));
    }
    let (source, sha) = scripts()[0];
    let mut native = true;
    for node in nodes {
        let mut conn = Conn::open(node, Duration::from_secs(2))?;
        match conn.cmd(&[b"SCRIPT", b"LOAD", source.as_bytes()])? {
            Reply::Bulk(Some(got)) if got == sha.as_bytes() => {}
            other => {
                return Err(format!(
                    "node {}: SCRIPT LOAD answered {other:?}, expected {sha}",
                    node.url
                ))
            }
        }
        native &= accepts_delifeq(&conn.cmd(&[b"DELIFEQ", b"redlock:ceil:probe", b"x"])?);
    }
    let ttl_ms = ttl.as_millis().max(1).to_string();
    let value = "loadgen-ceiling-v001"; // 20 bytes, like a lock value
    let set: Vec<String> = [
        "SET",
        "redlock:ceil:__rand_int__",
        value,
        "NX",
        "PX",
        &ttl_ms,
    ]
    .map(String::from)
    .to_vec();
    let release: Vec<String> = ["EVALSHA", sha, "1", "redlock:ceil:__rand_int__", value]
        .map(String::from)
        .to_vec();
    let delifeq: Vec<String> = ["DELIFEQ", "redlock:ceil:__rand_int__", value]
        .map(String::from)
        .to_vec();
    let clients = CLIENTS;

    let calibration = vec![CALIBRATION; nodes.len()];
    let set_rates = round_all(nodes, clients, &calibration, &set).await?;
    let sizes: Vec<u64> = set_rates
        .iter()
        .map(|r| ((r * round.as_secs_f64()) as u64).max(CALIBRATION))
        .collect();

    let started = std::time::Instant::now();
    let set_rates = round_all(nodes, clients, &sizes, &set).await?;
    let release_rates = round_all(nodes, clients, &sizes, &release).await?;
    let elapsed = started.elapsed();

    let n = nodes.len() as f64;
    let set_sum: f64 = set_rates.iter().sum();
    let release_sum: f64 = release_rates.iter().sum();
    let native = if native {
        // The script round deleted the keys: set them again so DELIFEQ meets what EVALSHA met.
        round_all(nodes, clients, &sizes, &set).await?;
        let delifeq_sum: f64 = round_all(nodes, clients, &sizes, &delifeq)
            .await?
            .iter()
            .sum();
        Some(NativeCeiling {
            cycles_per_s: cycles_per_s(set_sum / n, delifeq_sum / n),
            delifeq_ops_per_s: delifeq_sum,
        })
    } else {
        None
    };
    Ok(Ceiling {
        cycles_per_s: cycles_per_s(set_sum / n, release_sum / n),
        set_ops_per_s: set_sum,
        release_ops_per_s: release_sum,
        clients,
        elapsed,
        native,
    })
}

/// Whether a node's answer to `DELIFEQ <absent key> x` shows it has the command: an integer (`0`);
/// a server without it answers an unknown-command error.
fn accepts_delifeq(reply: &Reply) -> bool {
    matches!(reply, Reply::Int(_))
}

/// `1 / (1/acquire + 1/release)`.
pub fn cycles_per_s(acquire_rate: f64, release_rate: f64) -> f64 {
    if acquire_rate <= 0.0 || release_rate <= 0.0 {
        return 0.0;
    }
    1.0 / (1.0 / acquire_rate + 1.0 / release_rate)
}

/// Runs one redis-benchmark per node at the same time; returns each node's requests/s.
async fn round_all(
    nodes: &[NodeUrl],
    clients: usize,
    requests: &[u64],
    command: &[String],
) -> Result<Vec<f64>, String> {
    let runs = nodes
        .iter()
        .zip(requests)
        .map(|(node, &n)| one(node, clients, n, command));
    futures::future::join_all(runs).await.into_iter().collect()
}

async fn one(
    node: &NodeUrl,
    clients: usize,
    requests: u64,
    command: &[String],
) -> Result<f64, String> {
    let mut cmd = Command::new("redis-benchmark");
    cmd.args(["-h", &node.host, "-p", &node.port.to_string()])
        .args([
            "-c",
            &clients.to_string(),
            "-n",
            &requests.to_string(),
            "-P",
            &PIPELINE.to_string(),
        ])
        .args(["-r", &KEYSPACE.to_string(), "--csv"]);
    if let Some(user) = &node.user {
        cmd.args(["--user", user]);
    }
    if let Some(password) = &node.password {
        cmd.args(["-a", password]);
    }
    if node.db != 0 {
        cmd.args(["--dbnum", &node.db.to_string()]);
    }
    cmd.args(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = cmd
        .output()
        .await
        .map_err(|e| format!("cannot run redis-benchmark: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match parse_rps(&stdout) {
        Some(rps) if out.status.success() => Ok(rps),
        _ => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let why = stderr
                .lines()
                .chain(stdout.lines())
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no output");
            Err(format!(
                "redis-benchmark against {} failed ({}): {why}",
                node.url, out.status
            ))
        }
    }
}

/// The `rps` column of redis-benchmark's `--csv` output.
fn parse_rps(csv: &str) -> Option<f64> {
    let row = csv
        .lines()
        .find(|l| !l.starts_with("\"test\"") && l.contains("\",\""))?;
    // Fields are quoted; the command (first field) has no `","` inside.
    let fields: Vec<&str> = row.split("\",\"").collect();
    fields.get(1)?.trim_matches('"').parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_and_formula() {
        let csv = "\"test\",\"rps\",\"avg_latency_ms\"\n\"SET k:__rand_int__ v NX PX 10000\",\"109409.20\",\"8.687\"\n";
        assert_eq!(parse_rps(csv), Some(109_409.20));
        assert_eq!(parse_rps("garbage"), None);
        assert_eq!(cycles_per_s(100.0, 100.0), 50.0);
        assert_eq!(cycles_per_s(0.0, 100.0), 0.0);
    }

    #[test]
    fn delifeq_probe() {
        assert!(accepts_delifeq(&Reply::Int(0)));
        let unknown =
            "ERR unknown command 'DELIFEQ', with args beginning with: 'redlock:ceil:probe' 'x'";
        assert!(!accepts_delifeq(&Reply::Error(unknown.into())));
        // An ACL that refuses the command: not usable either.
        assert!(!accepts_delifeq(&Reply::Error("NOPERM".into())));
    }
}
