//! Measures the two ways to let at most K holders in, under contention, on five nodes it starts:
//! - **counting**: `lock(resource).permits(K)`, one round per attempt on `floor(5K/(K+1)) + 1`
//!   nodes (4 for K = 2, all 5 for K = 4);
//!   at most K tasks per engine attempting at once (its local gate);
//! - **slots**: `lock(resource).slots(K)`, K exclusive locks on a majority, tried from a random
//!   one on, one round each, with a pause when all are busy.
//!
//! Both with W workers over 4 engines (each its own connections), holding 2 ms, the same retry pause
//! (1-3 ms), healthy and with one node down. Prints grants/s, wait p50/p99, rounds per grant and the
//! most holders seen at once.
//! `cargo run --release --example permits_vs_slots [-- SECONDS [WORKERS]]`.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redlock_engine::Redlock;

const TTL: Duration = Duration::from_millis(500);
const HOLD: Duration = Duration::from_millis(2);

#[derive(Clone, Copy, PartialEq)]
enum Design {
    Counting,
    Slots,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let secs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let workers: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(64);
    let (urls, _servers) = support::start_nodes(5)?;
    let dead = format!(
        "redis://127.0.0.1:{}",
        std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port()
    );
    println!(
        "| design | K | nodes down | grants/s | wait p50 | wait p99 | rounds/grant | max holders |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|");
    for k in [2usize, 4] {
        for down in [0, 1] {
            let mut list = urls.clone();
            if down == 1 {
                list[4] = dead.clone();
            }
            for design in [Design::Counting, Design::Slots] {
                let run = measure(&list, design, k, workers, Duration::from_secs(secs)).await?;
                let name = if design == Design::Counting {
                    "counting"
                } else {
                    "slots"
                };
                if run.max_holders > k {
                    return Err(
                        format!("{name}: {} holders at once, K = {k}", run.max_holders).into(),
                    );
                }
                println!(
                    "| {name} | {k} | {down} | {:.0} | {:.2} ms | {:.2} ms | {:.2} | {} |",
                    run.grants as f64 / secs as f64,
                    run.p(0.50),
                    run.p(0.99),
                    run.rounds as f64 / run.grants.max(1) as f64,
                    run.max_holders
                );
            }
        }
    }
    Ok(())
}

struct Run {
    grants: usize,
    rounds: usize,
    waits_ms: Vec<f64>,
    max_holders: usize,
}

impl Run {
    fn p(&self, q: f64) -> f64 {
        if self.waits_ms.is_empty() {
            return f64::NAN;
        }
        self.waits_ms[((self.waits_ms.len() - 1) as f64 * q) as usize]
    }
}

async fn measure(
    urls: &[String],
    design: Design,
    k: usize,
    workers: usize,
    run: Duration,
) -> Result<Run, Box<dyn std::error::Error>> {
    let mut engines = Vec::new();
    for _ in 0..4 {
        engines.push(
            Redlock::builder()
                .nodes(urls.to_vec())
                .quarantine(false) // nodes started here hold no lock anyone could lose
                .retry(u32::MAX, Duration::from_millis(1), Duration::from_millis(2))
                .build()
                .await?,
        );
    }
    let holders = Arc::new(AtomicUsize::new(0));
    let max_holders = Arc::new(AtomicUsize::new(0));
    let stop = Instant::now() + run;
    let resource = format!("exports-{k}-{}", fastrand::u32(..));
    let mut tasks = Vec::new();
    for w in 0..workers {
        let e = engines[w % engines.len()].clone();
        let (holders, max_holders, resource) =
            (holders.clone(), max_holders.clone(), resource.clone());
        tasks.push(tokio::spawn(async move {
            let (mut grants, mut rounds, mut waits) = (0, 0, Vec::new());
            // From the end of the previous hold: a failed acquire's wait counts into the next grant's.
            let mut asked = Instant::now();
            while Instant::now() < stop {
                // The same request, two kinds; it waits until the run ends.
                let request = e.lock(&resource).ttl(TTL);
                let request = match design {
                    Design::Counting => request.permits(k as u32),
                    Design::Slots => request.slots(k as u32),
                };
                let until = tokio::time::Instant::from_std(stop);
                let lock = match tokio::time::timeout_at(until, request).await {
                    Ok(Ok(guard)) => {
                        rounds += guard.attempts() as usize;
                        Some(guard)
                    }
                    _ => None,
                };
                let Some(lock) = lock else { continue };
                waits.push(asked.elapsed().as_secs_f64() * 1e3);
                let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                max_holders.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(HOLD).await;
                holders.fetch_sub(1, Ordering::SeqCst);
                grants += 1;
                let _ = lock.release().await;
                asked = Instant::now();
            }
            (grants, rounds, waits)
        }));
    }
    let mut out = Run {
        grants: 0,
        rounds: 0,
        waits_ms: Vec::new(),
        max_holders: 0,
    };
    for t in tasks {
        let (g, r, w) = t.await?;
        out.grants += g;
        out.rounds += r;
        out.waits_ms.extend(w);
    }
    out.waits_ms.sort_by(f64::total_cmp);
    out.max_holders = max_holders.load(Ordering::SeqCst);
    Ok(out)
}
