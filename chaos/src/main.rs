//! `chaos`: the fault-injection suite of redlock-engine.
//!
//! `chaos [--short] [--scenario N]...` runs the orchestrator; `chaos client ...` is one client process,
//! started by the orchestrator re-executing itself.
//!
//! # Layout
//! - `suite`: the orchestrator — settings, the run over scenarios, the summary and exit status.
//! - `scenarios`: one file per scenario (`sNN_*`), and the runner that judges each one's logs; shared by
//!   all: `findings` (what a scenario returns); by several: `mixed_faults` (the fault timeline of
//!   12-14, 18 and 19), `key_census` (15's census of lock keys), `support` (in-process engines,
//!   bounded retries, time marks).
//! - `env`: one scenario's processes (nodes, storage, proxies, clients) and their teardown.
//! - `client`: the client process — its options (`client/args`), shared context (`client/ctx`), the
//!   acquire loop of each lock kind (`client/worker`), their critical section on the counter and its
//!   mirror, and the release (`client/section`), the renewed-lock holders with the load beside
//!   them (`client/renewed`, scenario 15), the fair-lock waiters (`client/fair`, scenario 19)
//!   with the tap on the engine's round events (`client/round_tap`), and an election's candidates
//!   and observers (`client/elect`, scenario 20).
//! - `checker`: overlaps (per resource, readers and semaphore holders may share), overruns, validity
//!   lies, torn reads, latency percentiles from the logs; `checker_tests.rs`: its rules on synthetic
//!   logs. `crowding`: never more than K semaphore holders at once (`crowding_tests.rs`);
//!   `fairness`: no overtaking among fair-lock waiters (`fairness_tests.rs`); `leaders`: one valid
//!   leader at a time, terms going up, observers agreeing (`leaders_tests.rs`).
//! - `logs`: every record of a scenario, read back from its log files.
//! - `record`: the log format shared by writers and the checker — the line types and the writer, the
//!   coded fields (`record/fields`), the `G` line (`record/grant`); `renewal_log`: its `R` line;
//!   `fair_log`: its `F` line (a fair acquire call and its rounds); `election_log`: its `L` and `O`
//!   lines (a leader's claims, an observer's leaders).
//! - `procs`: process guards for the clients (and the leak check). The redis-server nodes (how each is
//!   started: `NodeSpec`, e.g. with an AOF or under the clock shim), the fault-injecting TCP proxy, the
//!   one-shot RESP client and the clock shim's build and offset file come from the workspace's test kit
//!   (`testkit/`), started from the main thread with `PR_SET_PDEATHSIG` ([`env::start_node`]).
//! - `counter`: the storage counter client (and the keys it keeps).
//! - `clock`: `CLOCK_MONOTONIC` nanoseconds, shared by all processes; `faketime`: scenario 10's setup;
//!   scenario 16's node clock shim is `testkit::clock`.

// Chaos drives the per-kind methods (deprecated in favour of the request, `redlock.lock(r)`) and
// measures their polls; they keep working until they are removed, and chaos moves with them then.
#![allow(deprecated)]

mod checker;
mod client;
mod clock;
mod counter;
mod crowding;
mod election_log;
mod env;
mod fair_log;
mod fairness;
mod faketime;
mod leaders;
mod log_fields;
mod logs;
mod procs;
mod record;
mod renewal_log;
mod scenarios;
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
