//! A probe of the fair lock's order claim at its edge, run by hand (ignored in CI):
//! `scripts/with-redis cargo test --test it fair_ticket_window -- --ignored --nocapture`.
//!
//! `kinds::fair` says: "if waiter A's enqueue completed before waiter B's began, A gets the lock
//! before B". Its argument needs more: A's enqueue complete before B's **ticket round**, which comes
//! before B's enqueue. In between, B already holds a ticket taken without A's entry, so A's ticket can
//! equal B's (the queue's order is then the waiters' random values) or exceed it (if A's majority saw
//! a later waiter). This probe builds that window: B talks to every node through a proxy that delays
//! each direction by [`DELAY`], so its ticket round runs on the nodes at ~`DELAY` and its enqueue is
//! sent no earlier than `2 x DELAY`; A (direct) starts after B's ticket ran and its enqueue has landed
//! on a majority — checked on the nodes themselves — before `2 x DELAY`. Both wait behind a holder,
//! which then releases. Under the short claim A is first every time; with tied tickets B is first in
//! about half of the trials.
//!
//! (Found while writing chaos scenario 19, whose checker therefore starts B's place at a bound on its
//! ticket round: see `chaos/src/fairness.rs`.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{nodes, urls, RedisNode};
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
async fn a_waiter_whose_enqueue_began_after_another_completed_can_still_go_first() {
    let cluster = nodes(3);
    let mut proxies = Vec::new();
    for node in &cluster {
        proxies.push(Proxy::delayed(node.port, DELAY).await);
    }
    let slow: Vec<String> = proxies.iter().map(Proxy::url).collect();
    let holder = engine(urls(&cluster)).await;
    let mut b_first = 0;
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
        // B's ticket request reaches the nodes at ~DELAY; its reply is back at ~2 x DELAY.
        tokio::time::sleep(DELAY * 4 / 3).await;
        let ta = waiter(a, "A");
        let majority = cluster.len() / 2 + 1;
        let a_queued = crate::common::eventually(DELAY, || {
            cluster.iter().filter(|n| queued(n, &resource) >= 2).count() >= majority
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
        // B's enqueue lands at ~3 x DELAY; then the holder lets go.
        tokio::time::sleep(DELAY * 3).await;
        holder.release(held).await.unwrap();
        ta.await.unwrap();
        tb.await.unwrap();
        let order = order.lock().unwrap().clone();
        println!("trial {trial}: A's enqueue complete after {a_completed:?}; order {order:?}");
        if order.first() == Some(&"B") {
            b_first += 1;
        }
    }
    println!("B, whose enqueue began after A's had completed, was first in {b_first} of {TRIALS}");
    assert!(
        b_first > 0,
        "A was first every time: the window did not show (or the protocol closed it)"
    );
}
