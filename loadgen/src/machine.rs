//! What the numbers were measured on: the machine and the versions of everything compared.

use serde::Serialize;

/// The machine.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Logical CPUs available to this process.
    pub cores: usize,
    /// `linux`, `macos`, …
    pub os: String,
    /// `uname -a`, when available.
    pub uname: String,
    /// CPU model from /proc/cpuinfo, when available.
    pub cpu: String,
    /// `x86_64`, `aarch64`, …
    pub arch: String,
    /// The 1-minute load average when the runs started and when they ended: other work on the machine
    /// skews the figures, and this shows it.
    pub loadavg_start: Option<f64>,
    /// See `loadavg_start`.
    pub loadavg_end: Option<f64>,
}

/// The 1-minute load average, where /proc has it.
pub fn loadavg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

impl Machine {
    /// Reads the machine's description.
    pub fn detect() -> Self {
        let uname = std::process::Command::new("uname")
            .arg("-a")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines().find_map(|l| {
                    l.strip_prefix("model name")
                        .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
                })
            })
            .unwrap_or_default();
        Self {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            os: std::env::consts::OS.to_string(),
            uname,
            cpu,
            arch: std::env::consts::ARCH.to_string(),
            loadavg_start: None,
            loadavg_end: loadavg(),
        }
    }
}

/// Versions of the compared pieces.
#[derive(Debug, Clone, Serialize)]
pub struct Versions {
    /// `redis_version` of the first node.
    pub redis: String,
    /// This project's engine.
    pub redlock_engine: &'static str,
    /// The git commit the engine was built from (`-dirty`: with uncommitted changes to its sources).
    pub redlock_engine_commit: &'static str,
    /// The peer.
    pub rslock: &'static str,
    /// redis-rs, which rslock runs on.
    pub redis_rs: &'static str,
    /// fred, the `redlock-fred` transport.
    pub fred: &'static str,
    /// tokio.
    pub tokio: &'static str,
    /// loadgen itself.
    pub loadgen: &'static str,
    /// The compiler.
    pub rustc: &'static str,
}

impl Versions {
    /// The compiled-in versions plus the nodes' Redis version.
    pub fn with_redis(redis: String) -> Self {
        Self {
            redis,
            redlock_engine: env!("LOADGEN_VER_REDLOCK_ENGINE"),
            redlock_engine_commit: env!("LOADGEN_ENGINE_COMMIT"),
            rslock: env!("LOADGEN_VER_RSLOCK"),
            redis_rs: env!("LOADGEN_VER_REDIS_RS"),
            fred: env!("LOADGEN_VER_FRED"),
            tokio: env!("LOADGEN_VER_TOKIO"),
            loadgen: env!("CARGO_PKG_VERSION"),
            rustc: env!("LOADGEN_RUSTC"),
        }
    }
}
