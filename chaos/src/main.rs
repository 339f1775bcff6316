//! `chaos`: the fault-injection suite of redlock-engine (issue 5).
//!
//! `chaos [--short] [--scenario N]...` runs the orchestrator; `chaos client ...` is one client process,
//! started by the orchestrator re-executing itself.
//!
//! # Layout
//! - `suite`: the orchestrator — settings, the run over scenarios, the summary and exit status.
//! - `scenarios`: one file per scenario, and the runner that judges each one's logs.
//! - `env`: one scenario's processes (nodes, storage, proxies, clients) and their teardown.
//! - `client`: the client process — the acquire loop of each lock kind, logging; `renewed`: its
//!   renewed-lock holders and the load beside them (scenario 15).
//! - `section`: the critical section of each lock kind on the counter (and its mirror), and the release.
//! - `checker`: overlaps (per resource, readers may share), overruns, validity lies, torn reads,
//!   latency percentiles from the logs.
//! - `record`: the log format shared by writers and the checker; `renewal_log`: its `R` line.
//! - `node`, `proxy`, `procs`: redis-server processes, the fault-injecting TCP proxy, process guards.
//! - `counter`, `resp`: the storage counter client and a one-shot RESP client.
//! - `clock`: `CLOCK_MONOTONIC` nanoseconds, shared by all processes; `faketime`: scenario 10's setup.

mod checker;
mod client;
mod clock;
mod counter;
mod env;
mod faketime;
mod node;
mod procs;
mod proxy;
mod record;
mod renewal_log;
mod renewed;
mod resp;
mod scenarios;
mod section;
mod suite;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "chaos",
    about = "Fault-injection suite for redlock-engine: real redis-server nodes, client processes, \
             and a mutual-exclusion checker"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Sub>,
    #[command(flatten)]
    suite: suite::SuiteArgs,
}

#[derive(Debug, Subcommand)]
enum Sub {
    /// One client process (started by the orchestrator).
    Client(client::ClientArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Sub::Client(args)) => client::main(args),
        None => suite::main(cli.suite),
    }
}
