//! `redlock`: the operator's command line for redlock-engine locks.
//!
//! # Layout
//! - `args`: the options (clap derive), durations, clap's errors on one line with passwords scrubbed.
//! - `app`: the invocation — options → engine → one subcommand → exit code; `exit`: the codes (the
//!   one list, also `--help`'s), how a refused lock and `inspect`'s verdict map to them, and the
//!   `Failure` every subcommand returns.
//! - `connect`: the engine the subcommands share, built from the options.
//! - `acquire`: `acquire RESOURCE -- COMMAND`: wait for the lock, hold it (renewed) while a command
//!   runs; `command`: that command, in a process group of its own (signalled as one, stopped when the
//!   lock is lost); `held`: what `acquire` and `elect` do around that command while their lock or
//!   leadership is held; `signals`: SIGINT, SIGTERM and SIGHUP as `acquire` handles them.
//! - `elect`: `elect NAME -- COMMAND`: campaign, run the command while leader (as `acquire` runs
//!   one under a lock), resign; `leader`: `leader NAME [--watch]`, the leader and its changes.
//! - `release`: `release --force`, with its confirmation.
//! - `watch`: `watch RESOURCE`, a refreshing view.
//! - `show/`: what is printed — `table` (human tables, with their durations and escaping), `json`
//!   (`--json`, serde types of its own); `show/mod.rs` picks one.

mod acquire;
mod app;
mod args;
mod command;
mod connect;
mod elect;
mod exit;
mod held;
mod leader;
mod release;
mod show;
mod signals;
mod watch;

fn main() -> std::process::ExitCode {
    app::main()
}
