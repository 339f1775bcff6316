//! CPU spent over a phase, on both sides: this process (`getrusage(RUSAGE_SELF)`: user + system, so
//! the spawned redis-servers, which are child processes, are not in it) and the Redis servers
//! (`INFO cpu` `used_cpu_user + used_cpu_sys`, and `INFO commandstats` for the EVALSHA calls that
//! renewals are made of). The held scenario divides both by the renewals done in the phase.

use std::time::Duration;

use crate::nodes::addr::NodeUrl;
use crate::nodes::probe::{self, Conn, Reply};

/// This process's user + system CPU time so far.
pub fn process_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given; a zeroed rusage is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer cannot fail in a way that leaves the struct unsound.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// CPU a run's measured phase cost: this process (the client side: engine and loadgen's own loop) and
/// the servers (`None` when their `INFO` could not be read).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuUse {
    /// `getrusage(RUSAGE_SELF)` user + system over the phase.
    pub client: Duration,
    /// `INFO cpu` user + system over the phase, summed over the servers, seconds.
    pub server_s: Option<f64>,
    /// Commands the servers ran over the phase (`INFO commandstats` calls, a script's own calls
    /// included, loadgen's `INFO` readings not), summed over the servers.
    pub server_calls: Option<u64>,
}

/// Reads both sides' counters at the start of a phase; [`CpuStart::finish`] at its end.
#[derive(Debug, Clone, Copy)]
pub struct CpuStart {
    client: Duration,
    server: Option<ServerCounters>,
}

impl CpuStart {
    /// Now, for the servers behind `urls` (URLs that do not parse are skipped).
    pub async fn now(urls: &[String]) -> Self {
        let nodes = node_urls(urls);
        let server = server_counters_async(nodes).await.ok();
        Self {
            client: process_cpu(),
            server,
        }
    }

    /// What was spent since [`now`](Self::now).
    pub async fn finish(self, urls: &[String]) -> CpuUse {
        // The client first: the servers' reading below is loadgen's work, not the run's.
        let client = process_cpu().saturating_sub(self.client);
        let end = server_counters_async(node_urls(urls)).await.ok();
        let since = self.server.zip(end).map(|(a, b)| b.since(a));
        CpuUse {
            client,
            server_s: since.map(|d| d.cpu_s),
            server_calls: since.map(|d| d.calls),
        }
    }
}

fn node_urls(urls: &[String]) -> Vec<NodeUrl> {
    urls.iter().filter_map(|u| NodeUrl::parse(u).ok()).collect()
}

/// The servers' counters at one moment, summed over every server behind the nodes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerCounters {
    /// `used_cpu_user + used_cpu_sys`, seconds.
    pub cpu_s: f64,
    /// `cmdstat_evalsha` calls.
    pub evalsha_calls: u64,
    /// `total_commands_processed`.
    pub commands: u64,
    /// Every `cmdstat_*` line's calls but `INFO`'s: what the server ran, the commands scripts call
    /// included (`total_commands_processed` counts a script as one).
    pub calls: u64,
}

impl ServerCounters {
    /// `self - earlier`.
    pub fn since(self, earlier: Self) -> Self {
        Self {
            cpu_s: (self.cpu_s - earlier.cpu_s).max(0.0),
            evalsha_calls: self.evalsha_calls.saturating_sub(earlier.evalsha_calls),
            commands: self.commands.saturating_sub(earlier.commands),
            calls: self.calls.saturating_sub(earlier.calls),
        }
    }
}

/// [`server_counters`] on a blocking thread (the probe is a blocking client), for async callers.
pub async fn server_counters_async(nodes: Vec<NodeUrl>) -> Result<ServerCounters, String> {
    tokio::task::spawn_blocking(move || server_counters(&nodes))
        .await
        .map_err(|e| format!("INFO reader failed: {e}"))?
}

/// Reads the counters of every server behind `nodes` (blocking: call it off the runtime's thread).
pub fn server_counters(nodes: &[NodeUrl]) -> Result<ServerCounters, String> {
    let timeout = Duration::from_secs(5);
    let mut sum = ServerCounters::default();
    for node in nodes {
        for server in probe::servers(node, timeout)? {
            let mut conn = Conn::open(&server, timeout)?;
            let mut info = String::new();
            for section in [&b"cpu"[..], b"commandstats", b"stats"] {
                match conn.cmd(&[b"INFO", section])? {
                    Reply::Bulk(Some(text)) => info.push_str(&String::from_utf8_lossy(&text)),
                    other => {
                        return Err(format!("node {} answered INFO with {other:?}", server.url))
                    }
                }
            }
            let parsed = parse_info(&info);
            sum.cpu_s += parsed.cpu_s;
            sum.evalsha_calls += parsed.evalsha_calls;
            sum.commands += parsed.commands;
            sum.calls += parsed.calls;
        }
    }
    Ok(sum)
}

/// The counters in one server's `INFO cpu`, `INFO commandstats` and `INFO stats` text.
pub fn parse_info(text: &str) -> ServerCounters {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let float = |name: &str| {
        field(name)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // `cmdstat_evalsha:calls=12,usec=…,…`
    let evalsha_calls = field("cmdstat_evalsha")
        .and_then(|v| v.split(',').find_map(|kv| kv.strip_prefix("calls=")))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let calls = text
        .lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter(|l| !l.starts_with("info:"))
        .filter_map(|l| {
            l.split_once(':')?
                .1
                .split(',')
                .find_map(|kv| kv.strip_prefix("calls="))
        })
        .filter_map(|n| n.parse::<u64>().ok())
        .sum();
    ServerCounters {
        cpu_s: float("used_cpu_user") + float("used_cpu_sys"),
        calls,
        evalsha_calls,
        commands: field("total_commands_processed")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_fields() {
        let text =
            "# CPU\r\nused_cpu_sys:1.50\r\nused_cpu_user:2.25\r\nused_cpu_sys_children:9\r\n\
                    # Commandstats\r\ncmdstat_evalsha:calls=42,usec=100,usec_per_call=2.38\r\n\
                    cmdstat_eval:calls=7,usec=1\r\n# Stats\r\ntotal_commands_processed:99\r\n";
        let c = parse_info(text);
        assert_eq!(
            (c.cpu_s, c.evalsha_calls, c.commands, c.calls),
            (3.75, 42, 99, 49)
        );
        let d = c.since(ServerCounters {
            cpu_s: 1.0,
            evalsha_calls: 40,
            commands: 9,
            calls: 9,
        });
        assert_eq!(
            (d.cpu_s, d.evalsha_calls, d.commands, d.calls),
            (2.75, 2, 90, 40)
        );
        // loadgen's own `INFO` readings are not the run's.
        let with_info = format!("{text}cmdstat_info:calls=5,usec=3\r\n");
        assert_eq!(parse_info(&with_info).calls, 49);
    }

    #[test]
    fn process_cpu_moves() {
        let before = process_cpu();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(process_cpu() > before);
    }
}
