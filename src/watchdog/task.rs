//! The watchdog's task: sleeps until the earliest due renewal, starts every renewal due then (see
//! `round`), and runs them beside its timer. Holds the engine's core weakly while it sleeps, so it
//! never keeps it alive.

use futures::stream::{FuturesUnordered, StreamExt};
use std::cmp::Reverse;
use std::sync::{Arc, Weak};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::entry::COALESCE_WINDOW;
use super::round;
use crate::engine::core::Core;

/// The watchdog loop; ends when the engine is gone, or when nothing is scheduled or in flight (the
/// next renewed lock starts it again).
pub(crate) async fn run(weak: Weak<Core>, wake: Arc<Notify>) {
    let mut in_flight = FuturesUnordered::new();
    loop {
        let next = {
            let Some(core) = weak.upgrade() else {
                return;
            };
            let dog = core.watchdog();
            let now = Instant::now();
            let mut ready = Vec::new();
            let mut registry = dog.registry();
            while registry
                .heap
                .peek()
                .is_some_and(|Reverse(d)| d.at <= now + COALESCE_WINDOW)
            {
                let Some(Reverse(due)) = registry.heap.pop() else {
                    break;
                };
                let Some(entry) = due.entry.upgrade() else {
                    continue;
                };
                match entry.next_event() {
                    None => {} // released or lost: forget it
                    Some(at) if at > now + entry.coalesce_window() => registry.push(at, due.entry),
                    Some(_) => ready.push(entry),
                }
            }
            if !ready.is_empty() {
                for entries in round::rounds(&core, ready) {
                    in_flight.push(round::renew(core.clone(), entries));
                }
            }
            if registry.heap.is_empty() && in_flight.is_empty() {
                registry.running = false;
                return;
            }
            registry.heap.peek().map(|Reverse(d)| d.at)
        };
        tokio::select! {
            _ = sleep_until_opt(next) => {}
            _ = wake.notified() => {}
            Some(done) = in_flight.next(), if !in_flight.is_empty() => {
                if let Some(core) = weak.upgrade() {
                    let mut registry = core.watchdog().registry();
                    for (entry, at) in done {
                        if let Some(at) = at {
                            registry.push(at, Arc::downgrade(&entry));
                        }
                    }
                }
            }
        }
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
