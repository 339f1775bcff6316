//! Guards dropped as the process ends still release their locks: a panic out of `main` while a
//! guard is held, and guards dropped at the end of `main`, whose runtime ends right after (its
//! connection writers with it). Each is a child process (an ignored test of this binary, run as
//! `main` would run: a current-thread runtime that ends when the body does); the parent then finds
//! no key left on the node, long before the locks' TTL.

use std::time::Duration;

use crate::common::{eventually, nodes, RedisNode};

const NODE_ENV: &str = "EXIT_RELEASE_NODE";
/// Far longer than the checks wait: a key still there was left behind, not slow to expire.
const TTL: Duration = Duration::from_secs(60);

fn node_url() -> String {
    std::env::var(NODE_ENV).expect("run by the parent test, which names the node")
}

/// Runs one ignored test of this binary in a child process against `node`; returns its output.
fn child(test: &str, node: &RedisNode) -> (bool, String) {
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    crate::common::run_child_test(&format!("{module}::{test}"), &[(NODE_ENV, node.url())])
}

fn keys_left(node: &RedisNode) -> u64 {
    node.cmd_str(&["DBSIZE"]).trim().parse().unwrap_or(u64::MAX)
}

async fn engine() -> redlock_engine::Redlock {
    crate::common::builder()
        .nodes([node_url()])
        .build()
        .await
        .unwrap()
}

/// Runs `main` as a program's `#[tokio::main]` would: its runtime ends with it, and nothing after.
fn as_a_program(main: impl std::future::Future<Output = ()>) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(main)
}

#[test]
#[ignore = "a child process of a_panic_while_holding_a_guard_leaves_no_key"]
fn child_panics_holding_a_guard() {
    as_a_program(async {
        let redlock = engine().await;
        let _guard = redlock.lock("job").ttl(TTL).once().await.unwrap();
        println!("child: holding");
        panic!("the critical section failed");
    });
}

#[tokio::test]
async fn a_panic_while_holding_a_guard_leaves_no_key() {
    let node = &nodes(1)[0];
    for run in 0..20 {
        let (ok, out) = child("child_panics_holding_a_guard", node);
        assert!(!ok && out.contains("child: holding"), "run {run}: {out}");
        let freed = eventually(Duration::from_secs(2), || keys_left(node) == 0).await;
        assert!(
            freed,
            "run {run}: the panicked child's lock was left on the node: {out}"
        );
    }
}

/// As many guards as a job runner may hold at its end.
const GUARDS: usize = 10_000;

#[test]
#[ignore = "a child process of guards_dropped_at_the_end_of_main_leave_no_key"]
fn child_drops_guards_at_the_end() {
    as_a_program(async {
        let redlock = engine().await;
        let mut guards = Vec::with_capacity(GUARDS);
        for i in 0..GUARDS {
            guards.push(
                redlock
                    .lock(format!("item:{i}"))
                    .ttl(TTL)
                    .once()
                    .await
                    .unwrap(),
            );
        }
        println!("child: holding {}", guards.len());
        // Dropped here, then the engine, then the runtime ends: nothing awaits again.
    });
}

#[tokio::test]
async fn guards_dropped_at_the_end_of_main_leave_no_key() {
    let node = &nodes(1)[0];
    let (ok, out) = child("child_drops_guards_at_the_end", node);
    assert!(
        ok && out.contains(&format!("child: holding {GUARDS}")),
        "{out}"
    );
    let freed = eventually(Duration::from_secs(5), || keys_left(node) == 0).await;
    assert!(
        freed,
        "{} of {GUARDS} keys left behind: {out}",
        keys_left(node)
    );
}
