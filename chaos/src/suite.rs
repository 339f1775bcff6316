//! The orchestrator: builds the suite's settings, runs the chosen scenarios one after another, prints
//! one summary line per scenario and the verdict. Exit status non-zero if any scenario failed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::env::Ctx;
use crate::scenarios::{self, Verdict};

/// Orchestrator options (the command line without a subcommand).
#[derive(Debug, Clone, clap::Args)]
pub struct SuiteArgs {
    /// CI mode: each scenario a few seconds, no grant target.
    #[arg(long)]
    pub short: bool,
    /// Run only these scenarios (1-20); repeat or comma-separate. Default: all.
    #[arg(long = "scenario", value_name = "N", value_delimiter = ',')]
    pub scenarios: Vec<u8>,
    /// Grants each scenario waits for before stopping (default: 10000, or 0 with --short).
    #[arg(long)]
    pub grants: Option<usize>,
    /// Scenario 7 expects no overlap: for an engine that quarantines restarted nodes.
    #[arg(long)]
    pub expect_quarantine: bool,
    /// Where to write the logs (default: a fresh directory under the system temp dir).
    #[arg(long)]
    pub logs: Option<PathBuf>,
    /// Keep the logs even when every scenario passed.
    #[arg(long)]
    pub keep_logs: bool,
    /// Test hook: make every scenario panic mid-run (the teardown must still leave no process).
    #[arg(long, hide = true)]
    pub inject_panic: bool,
}

/// Runs the suite.
pub fn main(args: SuiteArgs) -> ExitCode {
    // One thread: every child is spawned from it, so PR_SET_PDEATHSIG ties them to this process.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(run(args))
}

async fn run(args: SuiteArgs) -> ExitCode {
    let chosen: Vec<_> = scenarios::ALL
        .into_iter()
        .filter(|s| args.scenarios.is_empty() || args.scenarios.contains(&s.number))
        .collect();
    if chosen.is_empty() {
        eprintln!("chaos: no such scenario {:?} (1-20)", args.scenarios);
        return ExitCode::FAILURE;
    }
    if let Err(why) = redis_server_runs() {
        eprintln!("chaos: {why}");
        return ExitCode::FAILURE;
    }
    let logs = args
        .logs
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("chaos-{}", std::process::id())));
    let ctx = Ctx {
        short: args.short,
        phase: if args.short {
            Duration::from_millis(1200)
        } else {
            Duration::from_secs(3)
        },
        target_grants: args.grants.unwrap_or(if args.short { 0 } else { 10_000 }),
        target_cap: if args.short {
            Duration::from_secs(10)
        } else {
            Duration::from_secs(180)
        },
        expect_quarantine: args.expect_quarantine,
        faketime: if chosen.iter().any(|s| s.number == 10) {
            crate::faketime::locate_or_install()
        } else {
            Err("not selected".into())
        },
        // Scenario 16 steps a node's clock, and so does scenario 20 among its faults.
        clockshim: if chosen.iter().any(|s| [16, 20].contains(&s.number)) {
            testkit::clock::build_shim(&logs.join("clockshim"))
        } else {
            Err(testkit::clock::ShimError::NoCompiler("not selected".into()))
        },
        exe: match std::env::current_exe() {
            Ok(exe) => exe,
            Err(e) => {
                eprintln!("chaos: cannot find my own executable: {e}");
                return ExitCode::FAILURE;
            }
        },
        logs: logs.clone(),
        inject_panic: args.inject_panic,
    };
    println!(
        "chaos: {} scenario(s), {} mode, logs in {}",
        chosen.len(),
        if ctx.short { "short" } else { "full" },
        logs.display()
    );
    let started = Instant::now();
    let mut verdicts: Vec<Verdict> = Vec::new();
    for sc in chosen {
        let t = Instant::now();
        let v = scenarios::run(&ctx, sc).await;
        println!("{}", v.line);
        for note in &v.notes {
            println!("    {note}");
        }
        println!("    ({:.1} s)", t.elapsed().as_secs_f64());
        verdicts.push(v);
    }
    let failed = verdicts.iter().filter(|v| !v.passed).count();
    let skipped = verdicts.iter().filter(|v| v.skipped).count();
    println!(
        "\nchaos summary ({:.0} s):",
        started.elapsed().as_secs_f64()
    );
    for v in &verdicts {
        let tag = match (v.passed, v.skipped) {
            (_, true) => "skip",
            (true, _) => "ok  ",
            (false, _) => "FAIL",
        };
        println!("  {tag} {}", v.line);
    }
    println!(
        "chaos: {} passed, {failed} failed, {skipped} skipped",
        verdicts.len() - failed - skipped
    );
    if failed == 0 && !args.keep_logs {
        let _ = std::fs::remove_dir_all(&logs);
    } else {
        println!("chaos: logs kept in {}", logs.display());
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Fails fast, with the fix, when redis-server is missing (instead of ten failed scenarios).
fn redis_server_runs() -> Result<(), String> {
    let missing = |e: String| {
        format!(
            "cannot run `redis-server --version` ({e}); install it with `apt-get install -y redis-server` \
             or run through scripts/with-redis"
        )
    };
    let out = std::process::Command::new("redis-server")
        .arg("--version")
        .output()
        .map_err(|e| missing(e.to_string()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(missing(out.status.to_string()))
    }
}
