//! One invocation: options → runtime → engine → the subcommand → exit code.
//!
//! Exit codes (`crate::exit`; also in `--help` and the README):
//! - 0: done;
//! - 1: the operation failed (a forced release no majority answered, refused at the prompt);
//! - 2: bad usage — options, URLs, durations, a release without `--force`;
//! - 3: no node reachable;
//! - 75 (`EX_TEMPFAIL`): `acquire` did not get the lock within `--wait`;
//! - 113: `acquire` lost the lock while the command ran; the command got SIGTERM;
//! - otherwise `acquire` exits with the command's own code (128+N when signal N ended it, 127 when it
//!   could not be started).

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

use crate::args::{one_line, scrub, Command, Options};
use crate::exit::{usage, Failure, FAILED, USAGE};
use crate::show;

pub fn main() -> ExitCode {
    let opts = match Options::try_parse() {
        Ok(opts) => opts,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => return fail(&Failure::new(USAGE, one_line(&e))),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return fail(&Failure::new(
                FAILED,
                format!("cannot start the runtime: {e}"),
            ))
        }
    };
    match runtime.block_on(run(&opts)) {
        Ok(code) => ExitCode::from(code),
        Err(f) => fail(&f),
    }
}

fn fail(f: &Failure) -> ExitCode {
    let msg = f.message.trim_start_matches("error: ").replace('\n', " ");
    eprintln!("redlock: error: {}", scrub(&msg));
    ExitCode::from(f.code)
}

/// Runs the subcommand; `Ok` carries the exit code (`acquire` passes its command's on).
async fn run(opts: &Options) -> Result<u8, Failure> {
    if opts.nodes.iter().all(|n| n.trim().is_empty()) {
        return Err(Failure::new(
            USAGE,
            "no nodes: give --nodes URL,... or REDLOCK_NODES",
        ));
    }
    match &opts.command {
        Command::Inspect { resource } => {
            let engine = crate::connect::engine(opts, None, None).await?;
            let seen = engine.inspect(resource).await.map_err(usage)?;
            show::inspection(&seen, opts.json);
            Ok(0)
        }
        Command::Nodes => {
            let engine = crate::connect::engine(opts, None, None).await?;
            show::nodes(&engine.nodes_status(), opts.json);
            Ok(0)
        }
        Command::Release {
            force,
            yes,
            resource,
        } => crate::release::run(opts, resource, *force, *yes).await,
        Command::Watch {
            resource,
            every,
            count,
        } => crate::watch::run(opts, resource, *every, *count).await,
        Command::Acquire { .. } => crate::acquire::run(opts).await,
    }
}
