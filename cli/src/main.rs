//! `redlock`: the operator's command line for redlock-engine locks.
//!
//! # Layout
//! - `args`: the options (clap derive), durations, clap's errors on one line with passwords scrubbed.
//! - `app`: the invocation — options → engine → one subcommand → exit code (the codes are listed
//!   there and in the README); `exit`: the codes and the `Failure` every subcommand returns.
//! - `connect`: the engine the subcommands share, built from the options.
//! - `acquire`: `acquire RESOURCE -- COMMAND`: hold the lock (renewed) while a command runs.
//! - `release`: `release --force`, with its confirmation.
//! - `watch`: `watch RESOURCE`, a refreshing view.
//! - `show/`: what is printed — `table` (human tables), `json` (`--json`, serde types of its own),
//!   and in `show/mod.rs` durations and escaping.

mod acquire;
mod app;
mod args;
mod connect;
mod exit;
mod release;
mod show;
mod watch;

fn main() -> std::process::ExitCode {
    app::main()
}
