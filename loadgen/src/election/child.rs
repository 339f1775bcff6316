//! A child process of an election run (`--election-child candidate|observer`): one engine on the
//! nodes, one line on stdout per event, each stamped on `CLOCK_MONOTONIC` (the clock every process
//! of the machine shares, so the parent compares a child's instants with its own):
//!
//! | role | lines |
//! |---|---|
//! | candidate | `ready` (campaigning), `elected TERM NS` (its campaign returned), `lost TERM` |
//! | observer | `ready` (following), `seen TERM REVISION NS` (an `observe()` item arrived) |
//!
//! A candidate campaigns until elected, then leads until it is killed (the failover trials end it
//! with `kill -9`) or its stdin closes (the parent is done or gone: it resigns and exits). A lost
//! leadership is reported and it campaigns again.

use std::io::BufRead;
use std::time::Duration;

use redlock_engine::{Election, Transport};
use tokio::sync::watch;

use crate::engines::redlock::build;
use crate::engines::{RetrySpec, Waiting};
use crate::overtakes::now_ns;
use crate::workload::Workload;

use super::args::Role;

/// Writes one protocol line on stdout.
fn say(line: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Resolves once the parent has closed our stdin (read on a plain thread: a tokio stdin read would
/// hold up the runtime's shutdown).
fn parent_done() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    std::thread::Builder::new()
        .name("loadgen-stdin".into())
        .spawn(move || {
            for line in std::io::stdin().lock().lines() {
                if line.is_err() {
                    break;
                }
            }
            let _ = tx.send(true);
        })
        .expect("a thread starts");
    rx
}

async fn done(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|d| *d).await;
}

/// The whole life of a candidate or observer process.
pub async fn child(
    urls: &[String],
    workload: &Workload,
    ttl: Duration,
    role: Role,
    name: &str,
) -> Result<(), String> {
    let retry = RetrySpec {
        retries: workload.retries,
        delay: workload.retry_delay,
        jitter: workload.retry_jitter,
    };
    // The engine's defaults, as loadgen's other runs use them (quarantine off: fresh spawned nodes).
    let engine = build(urls, Transport::Pipeline, retry, Waiting::Smart).await?;
    let election = engine.election(name).ttl(ttl);
    let parent = parent_done();
    let result = match role {
        Role::Candidate => candidate(&election, parent).await,
        Role::Observer => observer(&election, parent).await,
    };
    engine.shutdown().await;
    result
}

async fn candidate(election: &Election, parent: watch::Receiver<bool>) -> Result<(), String> {
    let value = format!("candidate-{}", std::process::id());
    loop {
        say("ready");
        let won = tokio::select! {
            won = election.campaign(&value).wait_forever() => won,
            () = done(parent.clone()) => return Ok(()),
        };
        let leadership = won.map_err(|e| format!("campaign failed: {e}"))?;
        let term = leadership.term();
        say(&format!("elected {term} {}", now_ns()));
        tokio::select! {
            _ = leadership.lost() => say(&format!("lost {term}")),
            () = done(parent.clone()) => {
                let _ = leadership.resign().await;
                return Ok(());
            }
        }
    }
}

async fn observer(election: &Election, parent: watch::Receiver<bool>) -> Result<(), String> {
    let mut changes = election.observe().map_err(|e| format!("observe: {e}"))?;
    say("ready");
    loop {
        tokio::select! {
            leader = changes.next() => {
                let Some(leader) = leader else {
                    return Err("the leader stream ended".into());
                };
                say(&format!("seen {} {} {}", leader.term, leader.revision, now_ns()));
            }
            () = done(parent.clone()) => return Ok(()),
        }
    }
}
