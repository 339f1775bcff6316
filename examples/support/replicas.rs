//! Examples that run themselves as their replicas (processes, as on three machines): the example's
//! own process starts `<example> replica N` for each replica on the same nodes, and each replica
//! process runs the example's replica body instead of its `main`.

use std::error::Error;
use std::future::Future;
use std::process::{Command, Stdio};

use super::Servers;

/// In a replica process (`<example> replica N`, started by [`replica_command`]): runs `body(N)` to
/// its end on a runtime of its own and returns what it returned. In the example's own process:
/// `None`, for `main` to go on.
pub fn run_if_replica<F, Fut>(body: F) -> Option<Result<(), Box<dyn Error>>>
where
    F: FnOnce(usize) -> Fut,
    Fut: Future<Output = Result<(), Box<dyn Error>>>,
{
    let mut args = std::env::args().skip(1);
    let (Some("replica"), Some(n)) = (args.next().as_deref(), args.next()) else {
        return None;
    };
    let run = || -> Result<(), Box<dyn Error>> {
        let n = n.parse()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(body(n))
    };
    Some(run())
}

/// The command that starts replica `n` of this example on the nodes `urls` (which
/// [`super::nodes`] reads back in the replica), with the quarantine as `servers` says; the
/// replica's output is piped to this process.
pub fn replica_command(n: usize, urls: &[String], servers: &Servers) -> std::io::Result<Command> {
    let quarantine = if servers.quarantine() { "on" } else { "off" };
    let mut command = Command::new(std::env::current_exe()?);
    command
        .args(["replica", &n.to_string()])
        .env("REDLOCK_NODES", urls.join(","))
        .env("REDLOCK_QUARANTINE", quarantine)
        .stdout(Stdio::piped());
    Ok(command)
}
