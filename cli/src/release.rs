//! `release --force RESOURCE`: shows what is held, asks on a terminal, then breaks the lock.

use std::io::{BufRead, IsTerminal, Write};

use crate::args::Options;
use crate::exit::{usage, Failure, FAILED, USAGE};
use crate::show;

pub async fn run(opts: &Options, resource: &str, force: bool, yes: bool) -> Result<u8, Failure> {
    if !force {
        return Err(Failure::new(
            USAGE,
            "release breaks the current holder's mutual exclusion; say so with --force",
        ));
    }
    let engine = crate::connect::engine(opts, None).await?;
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(Failure::new(
                USAGE,
                "not asking on a non-terminal: confirm with --yes",
            ));
        }
        let seen = engine.inspect(resource).await.map_err(usage)?;
        show::inspection(&seen, false);
        eprint!(
            "Force-release {resource:?} on every node? Its holder, if alive, keeps running without \
             the lock. [y/N] "
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "YES") {
            return Err(Failure::new(FAILED, "not released (answered no)"));
        }
    }
    match engine.force_release(resource).await {
        Ok(done) => {
            show::forced(resource, &engine.nodes_status(), &done, opts.json);
            Ok(0)
        }
        Err(redlock_engine::LockError::QuorumNotReached {
            ok,
            needed,
            failures,
        }) => {
            let why = failures
                .iter()
                .map(|(i, e)| format!("node {i}: {e}"))
                .collect::<Vec<_>>()
                .join("; ");
            Err(Failure::new(
                FAILED,
                format!("only {ok} node(s) answered, {needed} needed; the lock may still be held ({why})"),
            ))
        }
        Err(e) => Err(usage(e)),
    }
}
