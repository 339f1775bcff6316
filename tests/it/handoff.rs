//! The plain lock's cross-process hand-off (`protocol::handoff`): a release with a waiter marked in
//! another engine grants the key to the oldest one and tells only it, which holds the lock without
//! a round of its own — also with a node killed; a waiter that is a process killed with `kill -9`
//! gets a reservation instead, which expires by itself; a holder killed so lets the waiter in once
//! its keys expire, not before.

use std::future::Future;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{eventually, nodes, urls, RedisNode};
use redlock_engine::{Config, Lock, Redlock};

const TTL: Duration = Duration::from_secs(5);
const KEY: &[u8] = b"redlock:{h}";
const LIST: &[u8] = b"redlock:{h}:wait";

/// An engine on `cluster` that waits by cross-process hand-off, retrying 200 times `retry_delay`
/// apart (see [`config`]).
async fn handoff_engine(cluster: &[RedisNode], retry_delay: Duration) -> Redlock {
    Redlock::new(config(urls(cluster), retry_delay))
        .await
        .unwrap()
}

fn config(urls: Vec<String>, retry_delay: Duration) -> Config {
    Config {
        retry_count: 200,
        retry_delay,
        retry_jitter: Duration::ZERO,
        cross_process_handoff: true,
        ..crate::common::fresh_config(urls)
    }
}

/// Waiters marked on a majority of `cluster` (the list's length on each node).
fn marked_on_majority(cluster: &[RedisNode], waiters: usize) -> bool {
    let on = cluster
        .iter()
        .filter(|n| {
            n.try_cmd(&[b"ZCARD", LIST])
                .is_some_and(|l| l == waiters.to_string())
        })
        .count();
    on > cluster.len() / 2
}

/// A lock held by `holder` that took more than one attempt (it lost to `other` first), so its
/// release takes the hand-off form.
async fn contended_lock(holder: &Redlock, other: &Redlock) -> Lock {
    let first = other.acquire("h", TTL).await.unwrap();
    let holder = holder.clone();
    let taking = tokio::spawn(async move { holder.acquire("h", TTL).await.unwrap() });
    tokio::time::sleep(Duration::from_millis(200)).await;
    other.release(first).await.unwrap();
    let lock = taking.await.unwrap();
    assert!(lock.attempts() > 1, "it waited");
    lock
}

/// Two engines from `engine` and a [`contended_lock`] of the first's: the holder, the other
/// (kept, as it was by each test) and the lock.
async fn held_after_a_loss<F: Future<Output = Redlock>>(
    engine: impl Fn() -> F,
) -> (Redlock, Redlock, Lock) {
    let (holder, other) = (engine().await, engine().await);
    let lock = contended_lock(&holder, &other).await;
    (holder, other, lock)
}

/// Waits for `"h"` in `waiter` and reports how long it took.
fn wait_for(waiter: &Redlock) -> tokio::task::JoinHandle<Duration> {
    let waiter = waiter.clone();
    tokio::spawn(async move {
        let started = Instant::now();
        let lock = waiter.acquire("h", TTL).await.unwrap();
        let waited = started.elapsed();
        waiter.release(lock).await.unwrap();
        waited
    })
}

#[tokio::test]
async fn a_release_hands_the_lock_to_the_waiter_elsewhere_with_a_node_killed() {
    let mut cluster = nodes(5);
    // Slow retries: only the hand-off's wake can bring the waiter in quickly.
    let slow = || handoff_engine(&cluster, Duration::from_millis(1500));
    let (holder, _other, lock) = held_after_a_loss(slow).await;
    let waiter = slow().await;
    let started = Instant::now();
    let waiting = wait_for(&waiter);
    assert!(eventually(Duration::from_secs(3), || marked_on_majority(&cluster, 1)).await);
    let marked_after = started.elapsed();
    cluster[0].kill9();
    holder.release(lock).await.unwrap();
    let waited = waiting.await.unwrap();
    assert!(
        waited < marked_after + Duration::from_millis(800),
        "woken and let in by the release, not by its 1.5 s timer: {waited:?}"
    );
    // The hand-off took its name off the list where it won.
    assert!(marked_on_majority(&cluster[1..], 0));
}

/// Calls of `command` (lower case, as `INFO commandstats` names it) on `node` since its stats were
/// reset.
fn calls(node: &RedisNode, command: &str) -> u64 {
    let stats = node.cmd(&[b"INFO", b"commandstats"]);
    let line = stats
        .lines()
        .find(|l| l.starts_with(&format!("cmdstat_{command}:")));
    line.and_then(|l| l.split("calls=").nth(1))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The waiter's lock comes from the holder's release alone: no node runs a take-over round of the
/// waiter's, and the lock's validity counts from before the waiter queued.
#[tokio::test]
async fn a_release_grants_the_waiter_elsewhere_without_a_round_of_its_own() {
    let cluster = nodes(3);
    let slow = || handoff_engine(&cluster, Duration::from_millis(1500));
    let (holder, _other, lock) = held_after_a_loss(slow).await;
    let waiter = slow().await;
    let waiting = {
        let waiter = waiter.clone();
        tokio::spawn(async move { waiter.acquire("h", TTL).await.unwrap() })
    };
    assert!(eventually(Duration::from_secs(3), || marked_on_majority(&cluster, 1)).await);
    // Every node: the waiter is on the list and listens on its channel.
    let ready = || {
        cluster.iter().all(|n| {
            n.cmd_str(&["ZCARD", "redlock:{h}:wait"]) == "1"
                && !n
                    .cmd_str(&["PUBSUB", "CHANNELS", "redlock:{h}:h:*"])
                    .is_empty()
        })
    };
    assert!(eventually(Duration::from_secs(3), ready).await);
    // After the waiter first sent its value: its validity counts from before this.
    let queued = Instant::now();
    for node in &cluster {
        node.cmd(&[b"CONFIG", b"RESETSTAT"]);
    }
    holder.release(lock).await.unwrap();
    let granted = tokio::time::timeout(Duration::from_secs(1), waiting)
        .await
        .expect("granted by the release, not by the 1.5 s timer")
        .unwrap();
    assert!(granted.remaining() < TTL.saturating_sub(queued.elapsed()));
    for node in &cluster {
        // The release, and the waiter's unmark where its count was decided before that node's
        // grant was heard.
        assert!(calls(node, "evalsha") + calls(node, "eval") <= 2);
        assert_eq!(
            calls(node, "set"),
            1,
            "the release's grant, no take-over's SET"
        );
        assert_eq!(calls(node, "zrange"), 0, "no take-over round");
        assert_eq!(calls(node, "publish"), 1, "the grant's message");
    }
    waiter.release(granted).await.unwrap();
}

/// Waiters in four engines (processes, as far as the nodes can tell) are let in in the order they
/// began waiting, however the nodes received their marks: without the hand-off every release is a
/// race of all of them, and this order comes out by chance once in 24.
#[tokio::test]
async fn waiters_elsewhere_are_let_in_in_the_order_they_began_waiting() {
    let cluster = nodes(5);
    // Slow retries: a retry timer never fires during the test, so only the releases' wake-ups
    // (each to one named waiter) decide who is next.
    let slow = || handoff_engine(&cluster, Duration::from_millis(1500));
    let holder = slow().await;
    let lock = holder.acquire("h", TTL).await.unwrap();
    let (order, mut waiting) = (
        std::sync::Arc::new(std::sync::Mutex::new(Vec::new())),
        Vec::new(),
    );
    for i in 0..4 {
        let (engine, order) = (slow().await, order.clone());
        waiting.push(tokio::spawn(async move {
            let lock = engine.acquire("h", TTL).await.unwrap();
            order.lock().unwrap().push(i);
            // Held a moment, so the next one is surely waiting for this release.
            tokio::time::sleep(Duration::from_millis(30)).await;
            engine.release(lock).await.unwrap();
        }));
        // Each one waits (is on the list) before the next begins.
        let on_list = || marked_on_majority(&cluster, i + 1);
        assert!(eventually(Duration::from_secs(3), on_list).await);
    }
    holder.release(lock).await.unwrap();
    for w in waiting {
        w.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
}

/// A waiter that first queued behind a task of its own process keeps the place its call began at:
/// once it heads its process's queue it goes on the list ahead of a waiter elsewhere that began
/// later (it used to queue by when it became the head, behind every process that marked meanwhile).
#[tokio::test]
async fn a_waiter_queued_in_its_own_process_keeps_the_place_its_call_began_at() {
    let cluster = nodes(5);
    let slow = || config(urls(&cluster), Duration::from_millis(1500));
    // No local hand-off: the holder's release goes to the nodes however many wait at home.
    let home = Config {
        max_local_handoffs: 0,
        ..slow()
    };
    let (home, other) = (
        Redlock::new(home).await.unwrap(),
        Redlock::new(slow()).await.unwrap(),
    );
    // Held after a loss, so its release reserves the key for the first waiter on the list.
    let lock = contended_lock(&home, &other).await;
    let take = |engine: Redlock, hold: Duration| {
        tokio::spawn(async move {
            let lock = engine.acquire("h", TTL).await.unwrap();
            tokio::time::sleep(hold).await;
            engine.release(lock).await.unwrap();
        })
    };
    let short = Duration::from_millis(20);
    // Waits in `home`'s local queue, behind the holder: not on the list yet.
    let early = take(home.clone(), short);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(marked_on_majority(&cluster, 0));
    // The first on the list holds a while once it has the lock, so the list stays still: longer
    // than the checks below wait (CI once took over 800 ms to see `early` listed, and by then
    // `first` had released and the list had moved on).
    let first = take(
        Redlock::new(slow()).await.unwrap(),
        Duration::from_millis(3500),
    );
    assert!(eventually(Duration::from_secs(3), || marked_on_majority(&cluster, 1)).await);
    let late = take(Redlock::new(slow()).await.unwrap(), short);
    assert!(eventually(Duration::from_secs(3), || marked_on_majority(&cluster, 2)).await);
    // One entry per read: names are binary values, so a joined reply could not be split.
    let entry = |n: &RedisNode, at: &str| n.cmd_str(&["ZRANGE", "redlock:{h}:wait", at, at]);
    let (first_name, late_name) = (entry(&cluster[0], "0"), entry(&cluster[0], "1"));
    // Reserved for `first` (taken off the list); `early` then heads `home`'s queue, loses to the
    // reservation and marks: ahead of `late`, which began after it.
    home.release(lock).await.unwrap();
    let listed = |n: &RedisNode| {
        let (head, second) = (entry(n, "0"), entry(n, "1"));
        let two = n.cmd(&[b"ZCARD", LIST]) == "2";
        (two && head != first_name && second != first_name).then_some(head)
    };
    let early_marked = || cluster.iter().filter(|n| listed(n).is_some()).count() > 2;
    assert!(eventually(Duration::from_secs(3), early_marked).await);
    let ahead = cluster
        .iter()
        .filter(|n| listed(n).is_some_and(|head| head != late_name))
        .count();
    assert!(ahead > cluster.len() / 2, "`late` is first on a majority");
    for w in [early, first, late] {
        w.await.unwrap();
    }
}

/// Another process of this test binary on `cluster` (`handoff::child`): it waits for `"h"` until
/// killed, or with `hold` takes it for that TTL and holds it until killed.
fn spawn_child(cluster: &[RedisNode], hold: Option<Duration>) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["handoff::child", "--exact", "--ignored", "--nocapture"])
        .env("HANDOFF_CHILD_NODES", urls(cluster).join(","))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(hold) = hold {
        cmd.env("HANDOFF_CHILD_HOLD_MS", hold.as_millis().to_string());
    }
    cmd.spawn().unwrap()
}

/// The holder's key's time to live on each node, in ms (`None` where it is not set).
fn key_ttls(cluster: &[RedisNode]) -> Vec<Option<u64>> {
    cluster
        .iter()
        .map(|n| n.try_cmd(&[b"PTTL", KEY]).and_then(|t| t.parse().ok()))
        .collect()
}

#[tokio::test]
async fn a_holder_killed_with_sigkill_lets_the_waiter_in_once_its_keys_expire_not_before() {
    const HOLD: Duration = Duration::from_millis(1500);
    let cluster = nodes(3);
    let mut holder = spawn_child(&cluster, Some(HOLD));
    let held = eventually(Duration::from_secs(10), || {
        key_ttls(&cluster).iter().filter(|t| t.is_some()).count() >= 2
    })
    .await;
    assert!(held, "the child process holds the lock on a majority");
    let waiter = handoff_engine(&cluster, Duration::from_millis(30)).await;
    // When a majority of the holder's keys will have expired: the second-shortest time to live of
    // three (read before the wait starts, so never later than the truth).
    let mut ttls: Vec<u64> = key_ttls(&cluster).into_iter().flatten().collect();
    ttls.sort_unstable();
    let free_on_majority = Duration::from_millis(ttls[1]);
    let waiting = wait_for(&waiter);
    assert!(
        eventually(Duration::from_secs(1), || marked_on_majority(&cluster, 1)).await,
        "the waiter queues on the nodes"
    );
    holder.kill().unwrap(); // SIGKILL: no release, the keys expire by themselves
    holder.wait().unwrap();
    let waited = tokio::time::timeout(HOLD + Duration::from_secs(3), waiting)
        .await
        .expect("the waiter gets the lock once the dead holder's keys expired")
        .unwrap();
    // 20 ms for the test's own reads of PTTL before the wait began: the lock is not granted
    // while the dead holder's keys still stand on a majority.
    assert!(
        waited + Duration::from_millis(20) >= free_on_majority,
        "granted after {waited:?}, the keys stood for {free_on_majority:?}"
    );
    assert!(
        waited < free_on_majority + Duration::from_secs(2),
        "let in soon after the expiry, not much later: {waited:?} (keys {free_on_majority:?})"
    );
}

#[tokio::test]
async fn a_waiter_killed_with_sigkill_holds_the_key_no_longer_than_its_reservation() {
    let cluster = nodes(3);
    let fast = || handoff_engine(&cluster, Duration::from_millis(30));
    let (holder, _other, lock) = held_after_a_loss(fast).await;
    // The oldest waiter: another process, killed while it waits.
    let mut child = spawn_child(&cluster, None);
    let child_marked =
        eventually(Duration::from_secs(10), || marked_on_majority(&cluster, 1)).await;
    assert!(child_marked, "the child process waits, marked");
    let waiter = fast().await;
    let waiting = wait_for(&waiter);
    assert!(eventually(Duration::from_secs(3), || marked_on_majority(&cluster, 2)).await);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    holder.release(lock).await.unwrap();
    // Reserved for the dead child (the oldest), on a majority: nobody's lock, only its name.
    let reserved = cluster
        .iter()
        .filter(|n| n.cmd(&[b"GET", KEY]).starts_with('r'))
        .count();
    assert!(reserved >= 2, "the key is reserved for the oldest waiter");
    let waited = tokio::time::timeout(Duration::from_secs(3), waiting)
        .await
        .expect("the next waiter gets the lock once the reservation expired")
        .unwrap();
    assert!(waited < Duration::from_secs(3), "{waited:?}");
}

/// The child process of the tests above: waits for `"h"` until killed, or (`HANDOFF_CHILD_HOLD_MS`)
/// takes it for that TTL and holds it until killed. Run only by those tests.
#[tokio::test]
#[ignore = "a child process of the handoff tests that kill one"]
async fn child() {
    let Ok(nodes) = std::env::var("HANDOFF_CHILD_NODES") else {
        return;
    };
    let urls = nodes.split(',').map(String::from).collect();
    let engine = Redlock::new(config(urls, Duration::from_millis(30)))
        .await
        .unwrap();
    let ttl = std::env::var("HANDOFF_CHILD_HOLD_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(Duration::from_secs(60), Duration::from_millis);
    let lock = engine.acquire("h", ttl).await;
    // A waiter is killed before it gets here; a holder holds until killed.
    std::mem::forget(lock);
    std::future::pending::<()>().await;
}
