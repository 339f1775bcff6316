//! A probe of the fair lock's order claim at the edge where it used to be weaker, run by hand (ignored
//! in CI): `scripts/with-redis cargo test --test it fair_ticket_window -- --ignored --nocapture`.
//!
//! The fair lock once took a ticket in a round of its own before adding its entry: a waiter A whose
//! enqueue completed between B's ticket round and B's add was not ordered before B — B already held
//! a ticket taken without A's entry, so the tie-break of the waiters' random values decided (B was
//! first in 3-5 of 12 trials here). Each node now gives the ticket in the same round that adds the
//! entry, so a place is fixed where and when the enqueue reaches the nodes. This probe builds the old
//! window: B talks to every node through a proxy that delays each direction by [`DELAY`], so its
//! enqueue lands at ~`DELAY` and its answers are back at ~`2 x DELAY`; A (direct) starts after B's
//! enqueue landed, and its own has landed on a majority — checked on the nodes themselves — before
//! `2 x DELAY`. Both wait behind a holder, which then releases. B's enqueue began, and reached every
//! node, before A's began: B must be first every time (with a ticket round, about half of the
//! trials put A first).
//!
//! (Found while writing chaos scenario 19, whose checker starts B's place at a bound on its first
//! round: see `chaos/src/fairness.rs`.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{delayed_proxies, nodes, urls, RedisNode};
use redlock_engine::{Config, Redlock};
use testkit::Proxy;
use tokio::time::Instant;

const DELAY: Duration = Duration::from_millis(150);
const TTL: Duration = Duration::from_secs(10);
const TRIALS: usize = 12;

async fn engine(nodes: Vec<String>) -> Redlock {
    Redlock::new(Config {
        nodes,
        // Above the proxied round trip (2 x DELAY), whatever the fitted deadline would be.
        node_timeout: Some(Duration::from_secs(2)),
        acquire_timeout: Some(Duration::from_secs(20)),
        quarantine: false,
        ..Config::default()
    })
    .await
    .unwrap()
}

/// Waiters queued on `node` for `resource` (the holder's entry included).
fn queued(node: &RedisNode, resource: &str) -> usize {
    let key = format!("redlock:{{{resource}}}:fair:q");
    node.cmd(&[b"ZCARD", key.as_bytes()]).parse().unwrap()
}

#[tokio::test]
#[ignore = "a probe of the fair lock's order claim, run by hand (see the module doc)"]
async fn a_waiter_whose_enqueue_reached_the_nodes_first_goes_first() {
    let cluster = nodes(3);
    let proxies = delayed_proxies(&cluster, DELAY).await;
    let slow: Vec<String> = proxies.iter().map(Proxy::url).collect();
    let holder = engine(urls(&cluster)).await;
    let (mut b_first, mut counted) = (0, 0);
    for trial in 0..TRIALS {
        // Fresh engines: a waiter's value (the tie-break) is random per acquire, but take no chance
        // on a per-engine part of it.
        let (a, b) = (engine(urls(&cluster)).await, engine(slow.clone()).await);
        let resource = format!("edge{trial}");
        let held = holder.acquire_fair(&resource, TTL).await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let waiter = |e: Redlock, name: &'static str| {
            let (order, resource) = (order.clone(), resource.clone());
            tokio::spawn(async move {
                let lock = e.acquire_fair(&resource, TTL).await.unwrap();
                order.lock().unwrap().push(name);
                e.release(lock).await.unwrap();
            })
        };
        let start = Instant::now();
        let tb = waiter(b, "B");
        // B's enqueue reaches the nodes at ~DELAY; its answers are back at ~2 x DELAY.
        tokio::time::sleep(DELAY * 4 / 3).await;
        let ta = waiter(a, "A");
        // The holder, B (landed at ~DELAY) and A.
        let majority = cluster.len() / 2 + 1;
        let a_queued = crate::common::eventually(DELAY, || {
            cluster.iter().filter(|n| queued(n, &resource) >= 3).count() >= majority
        })
        .await;
        let a_completed = start.elapsed();
        assert!(a_queued, "trial {trial}: A's enqueue did not land");
        if a_completed >= DELAY * 2 {
            println!("trial {trial}: A queued only after {a_completed:?}; not counted");
            holder.release(held).await.unwrap();
            let _ = (ta.await, tb.await);
            continue;
        }
        // B's answers are in by ~2 x DELAY (an agree round, if any, by ~4 x); then the holder lets go.
        tokio::time::sleep(DELAY * 4).await;
        holder.release(held).await.unwrap();
        ta.await.unwrap();
        tb.await.unwrap();
        let order = order.lock().unwrap().clone();
        println!("trial {trial}: A's enqueue complete after {a_completed:?}; order {order:?}");
        counted += 1;
        if order.first() == Some(&"B") {
            b_first += 1;
        }
    }
    println!(
        "B, whose enqueue reached the nodes before A's began, was first in {b_first} of {counted}"
    );
    assert!(counted >= TRIALS / 2, "too few trials built the window");
    assert_eq!(
        b_first, counted,
        "A went first though B's enqueue had reached every node before A's began"
    );
}
