//! A periodic job that one replica at a time runs. Three replicas (processes, as on three machines)
//! each try the job's lock once per tick: the one that gets it runs the job under a renewed lock,
//! the others skip the tick. Then the holder is killed (kill -9: no release, no more renewals): its
//! lock expires at its TTL and another replica takes over.
//!
//! Run: `cargo run --example periodic_job` (starts three redis-server nodes, or set `REDLOCK_NODES`).
//! It runs itself as the replicas (`periodic_job replica N`).

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use redlock_engine::RenewPolicy;

mod support;

/// How long a dead holder keeps the job: the lock lives this long without renewals.
const TTL: Duration = Duration::from_millis(600);
const TICK: Duration = Duration::from_millis(200);
/// Longer than the TTL: the watchdog renews the lock while the job runs.
const JOB: Duration = Duration::from_millis(1000);
/// Each replica stops after this long (an example must end by itself).
const RUN_FOR: Duration = Duration::from_secs(5);

/// One replica: every tick, one attempt at the job's lock.
async fn replica(n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let (redlock, _servers) = support::engine().await?;
    let end = Instant::now() + RUN_FOR;
    while Instant::now() < end {
        // A tick: also after a run, so that another replica may take the next one.
        tokio::time::sleep(TICK).await;
        let request = redlock.lock("job:nightly-report").ttl(TTL).once();
        let lock = match request.renewed(RenewPolicy::default()).await {
            Ok(lock) => lock,
            Err(e) if e.is_busy() => continue, // another replica runs it: skip this tick
            Err(e) => {
                println!("replica {n}: no lock ({e}); next tick");
                continue;
            }
        };
        println!("replica {n}: job started");
        tokio::select! {
            _ = lock.lost() => println!("replica {n}: lock lost, job stopped"),
            _ = tokio::time::sleep(JOB) => println!("replica {n}: job done ({} renewals)", lock.renewals()),
        }
        lock.release().await.ok(); // after a loss there is nothing left to release
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Some(done) = support::replicas::run_if_replica(replica) {
        return done;
    }

    // 1. Three replicas on the same nodes, their output read line by line.
    let (urls, servers) = support::nodes()?;
    let (tx, lines) = mpsc::channel();
    let mut replicas = Vec::new();
    for n in 0..3 {
        let mut child = support::replicas::replica_command(n, &urls, &servers)?.spawn()?;
        let (out, tx) = (child.stdout.take().unwrap(), tx.clone());
        std::thread::spawn(move || {
            BufReader::new(out)
                .lines()
                .map_while(Result::ok)
                .for_each(|l| tx.send(l).unwrap_or(()))
        });
        replicas.push(child);
    }
    drop(tx);

    // 2. Follow them: at most one runs the job at a time; kill the first holder mid-job.
    let (mut running, mut runs, mut killed) = (None::<String>, 0, None::<(String, Instant)>);
    let mut takeover = None;
    for line in lines {
        println!("{line}");
        let (who, what) = line.split_once(": ").unwrap_or(("", ""));
        if what == "job started" {
            if let Some(other) = &running {
                return Err(format!("{who} started while {other} runs the job").into());
            }
            running = Some(who.to_string());
            runs += 1;
            match &killed {
                None => {
                    std::thread::sleep(JOB / 3);
                    let n: usize = who.trim_start_matches("replica ").parse()?;
                    replicas[n].kill()?;
                    println!("{who}: killed (kill -9) mid-job: its lock stays until its TTL");
                    killed = Some((who.to_string(), Instant::now()));
                    running = None;
                }
                Some((_, at)) if takeover.is_none() => {
                    takeover = Some(at.elapsed());
                    println!(
                        "{who} took over {:?} after the kill (TTL {TTL:?})",
                        at.elapsed()
                    );
                }
                Some(_) => {}
            }
        } else if what.starts_with("job done") || what.starts_with("lock lost") {
            running = None;
        }
    }
    for mut child in replicas {
        child.wait()?;
    }
    if takeover.is_none() {
        return Err("no replica took over after the kill".into());
    }
    println!("{runs} runs, never two at once");
    Ok(())
}
