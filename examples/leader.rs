//! Leader election: three replicas of a service (processes, as on three machines) campaign to run
//! its scheduler; the leader runs it, the others follow the leader (`observe`). Each run is written
//! to a store with the leader's term, and the store (a `FencedStore`) refuses a lower term than it
//! has taken.
//!
//! 1. The first leader is killed (kill -9: no resignation): another replica is elected once its
//!    leadership's TTL has run out.
//! 2. The second leader pauses (a blocked thread: a stand-in for a GC pause or a stopped VM) past
//!    its TTL, between checking that it leads and writing: the third replica is elected meanwhile
//!    and writes; the paused one wakes, writes with its old term, and is refused.
//!
//! Run: `cargo run --example leader` (starts three redis-server nodes and one for the store, or set
//! `REDLOCK_NODES` for the lock nodes). It runs itself as the replicas (`leader replica N`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use redlock_engine::Written;

mod support;

/// The lock nodes' URLs and the servers started for them.
type Nodes = (Vec<String>, support::Servers);

/// How long a dead leader keeps leading: its leadership lives this long without renewals.
const TTL: Duration = Duration::from_millis(800);
/// How often the leader runs the scheduler.
const TICK: Duration = Duration::from_millis(200);

/// One replica: follow the leader, campaign, run the scheduler while leader. Its stdin says
/// `pause` (block the thread before the next write) or `stop` (resign and exit).
async fn replica(n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let (redlock, _servers) = support::engine().await?;
    let store = redlock
        .fenced_store(&std::env::var("LEADER_STORE")?)
        .await?;
    let election = redlock.election("scheduler").ttl(TTL);
    let mut changes = election.observe()?;
    tokio::spawn(async move {
        while let Some(leader) = changes.next().await {
            let value = String::from_utf8_lossy(&leader.value);
            println!("replica {n}: sees leader {value} (term {})", leader.term);
        }
    });
    let (tx, mut orders) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut pause = false;
    loop {
        let leadership = tokio::select! {
            won = election.campaign(format!("replica-{n}")) => won?,
            _ = orders.recv() => return Ok(()), // stopped while following
        };
        let term = leadership.term();
        println!("replica {n}: elected (term {term})");
        let mut ticks = tokio::time::interval(TICK);
        let mut stored = 0;
        for run in 1.. {
            tokio::select! {
                why = leadership.lost() => {
                    println!("replica {n}: leadership lost ({why}) after {stored} runs stored");
                    break;
                }
                order = orders.recv() => match order.as_deref() {
                    Some("pause") => pause = true,
                    _ => {
                        leadership.resign().await?;
                        println!("replica {n}: resigned after {stored} runs stored");
                        return Ok(());
                    }
                },
                _ = ticks.tick() => {
                    if !leadership.is_valid() {
                        continue;
                    }
                    if std::mem::take(&mut pause) {
                        println!("replica {n}: paused");
                        // Nothing of this process runs, renewals included.
                        std::thread::sleep(TTL * 3);
                    }
                    let what = format!("run {run} by replica {n}");
                    match store.set("scheduler:last-run", &what, term).await? {
                        Written::Stored => {
                            stored += 1;
                            if stored == 1 {
                                println!("replica {n}: {what} stored (term {term})");
                            }
                        }
                        Written::Rejected { newer } => println!(
                            "replica {n}: stale write rejected (term {term}, the store has {newer})"
                        ),
                    }
                }
            }
        }
    }
}

/// Starts replica `n`; its output comes to `tx` as `(n, what it said)`.
fn start(n: usize, nodes: &Nodes, store: &str, tx: mpsc::Sender<(usize, String)>) -> Child {
    let (urls, servers) = nodes;
    let mut child = support::replicas::replica_command(n, urls, servers)
        .expect("own path")
        .env("LEADER_STORE", store)
        .stdin(Stdio::piped())
        .spawn()
        .expect("a replica starts");
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let what = line.split_once(": ").map_or("", |(_, w)| w).to_string();
            let _ = tx.send((n, what));
        }
    });
    child
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Some(done) = support::replicas::run_if_replica(replica) {
        return done;
    }

    // Three replicas on the same nodes, and a store of the example's own.
    let nodes = support::nodes()?;
    let (store, _store_server) = support::start_nodes(1)?;
    let (tx, lines) = mpsc::channel();
    let mut replicas: Vec<Child> = (0..3)
        .map(|n| start(n, &nodes, &store[0], tx.clone()))
        .collect();
    drop(tx);
    let say = |child: &mut Child, order: &str| {
        let _ = writeln!(child.stdin.as_mut().unwrap(), "{order}");
    };

    let (mut leaders, mut killed, mut paused) = (Vec::new(), None::<Instant>, None::<usize>);
    let mut seen: Vec<Vec<u64>> = vec![Vec::new(); 3];
    let (mut rejected, mut stopping) = (false, false);
    for (n, what) in lines {
        println!("replica {n}: {what}");
        let term = |w: &str| {
            w.rsplit_once("(term ")
                .and_then(|(_, t)| t[..t.len() - 1].parse().ok())
        };
        if what.starts_with("elected") {
            leaders.push((n, term(&what).unwrap_or(0)));
            if let (2, Some(at)) = (leaders.len(), killed) {
                println!(
                    "replica {n} took over {:?} after the kill (TTL {TTL:?})",
                    at.elapsed()
                );
            }
        } else if what.starts_with("sees leader") {
            seen[n].extend(term(&what));
        } else if what.ends_with(&format!(
            "stored (term {})",
            leaders.last().map_or(0, |l| l.1)
        )) {
            match leaders.len() {
                // The first leader ran the scheduler once: kill it.
                1 if killed.is_none() => {
                    replicas[n].kill()?;
                    println!("replica {n}: killed (kill -9) while leading");
                    killed = Some(Instant::now());
                }
                // The second one too: pause it before its next write.
                2 if paused.is_none() => {
                    say(&mut replicas[n], "pause");
                    paused = Some(n);
                }
                _ => {}
            }
        } else if what.starts_with("stale write rejected") {
            rejected = true;
        }
        if rejected && leaders.len() >= 3 && !stopping {
            stopping = true;
            for (i, child) in replicas.iter_mut().enumerate() {
                if killed.is_none() || Some(i) != leaders.first().map(|l| l.0) {
                    say(child, "stop");
                }
            }
        }
    }
    for mut child in replicas {
        child.wait()?;
    }

    let terms: Vec<u64> = leaders.iter().map(|l| l.1).collect();
    if !terms.windows(2).all(|w| w[1] > w[0]) || terms.len() < 3 {
        return Err(format!("leaders' terms not increasing: {leaders:?}").into());
    }
    if !rejected {
        return Err("the paused leader's stale write was not rejected".into());
    }
    if let Some(n) = seen.iter().position(|s| !s.windows(2).all(|w| w[1] > w[0])) {
        return Err(format!("replica {n} saw terms go back: {:?}", seen[n]).into());
    }
    println!("leaders in term order {terms:?}; every replica saw the terms in order");
    Ok(())
}
