//! One invocation: options → runtime → engine → the subcommand → exit code.
//!
//! The exit codes are listed once, in `crate::exit` (`exit::HELP` is what `--help` shows); a
//! subcommand's `Ok` is its code (`inspect`: the verdict; `acquire`: the command's).

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

use crate::args::{one_line, scrub, Command, Options};
use crate::exit::{self, usage, Failure, FAILED, USAGE};
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
            let engine = crate::connect::engine(opts, None).await?;
            let seen = engine.inspect(resource).await.map_err(usage)?;
            show::inspection(&seen, opts.json);
            Ok(exit::verdict(seen.verdict))
        }
        Command::Nodes => {
            let engine = crate::connect::engine(opts, None).await?;
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
        Command::Acquire(args) => crate::acquire::run(opts, args).await,
        Command::Elect(args) => crate::elect::run(opts, args).await,
        Command::Leader { name, watch } => crate::leader::run(opts, name, *watch).await,
    }
}
