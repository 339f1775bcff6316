//! Real faults: a frozen node (SIGSTOP), a killed and restarted node (kill -9), a flushed script cache,
//! a node gone without a word (its connections cut in silence by a proxy).

use std::time::Duration;

use crate::common::{build, builder, each_transport, eventually, nodes, quick, transports, urls};
use redlock_engine::{LockError, Redlock, Transport};
use testkit::Proxy;
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(2);
/// Node deadline used here; every operation must come back within it plus this margin (the machine is
/// small and shared, so the margin is generous; an unbounded wait would take seconds).
const NODE_TIMEOUT: Duration = Duration::from_millis(50);
const MARGIN: Duration = Duration::from_millis(250);

async fn engine_with_timeout(urls: Vec<String>, transport: Transport) -> Redlock {
    build(
        quick(urls, 0)
            .transport(transport)
            .node_timeout(NODE_TIMEOUT),
    )
    .await
}

#[tokio::test]
async fn a_frozen_node_neither_blocks_nor_counts() {
    let mut cluster = nodes(5);
    for transport in transports() {
        let e = engine_with_timeout(urls(&cluster), transport).await;
        cluster[2].freeze();
        for i in 0..20 {
            let resource = format!("frozen-{i}-{transport:?}");
            let started = Instant::now();
            let mut lock = e
                .acquire(resource.as_bytes(), TTL)
                .await
                .unwrap_or_else(|err| panic!("healthy majority must grant ({transport:?}): {err}"));
            assert!(
                started.elapsed() < NODE_TIMEOUT + MARGIN,
                "acquire took {:?}",
                started.elapsed()
            );

            let started = Instant::now();
            e.extend(&mut lock, TTL).await.unwrap();
            assert!(
                started.elapsed() < NODE_TIMEOUT + MARGIN,
                "extend took {:?}",
                started.elapsed()
            );

            let started = Instant::now();
            e.release(lock).await.unwrap();
            assert!(
                started.elapsed() < NODE_TIMEOUT + MARGIN,
                "release took {:?}",
                started.elapsed()
            );
        }
        // With two more nodes frozen, no majority: acquire fails, and fast.
        cluster[3].freeze();
        cluster[4].freeze();
        let started = Instant::now();
        let err = e.try_acquire(b"frozen-majority", TTL).await.unwrap_err();
        assert!(matches!(err, LockError::QuorumNotReached { .. }), "{err:?}");
        assert!(
            started.elapsed() < NODE_TIMEOUT + MARGIN,
            "failed acquire took {:?}",
            started.elapsed()
        );
        for node in &mut cluster[2..] {
            node.thaw();
        }
        // Late replies from the thawed nodes are never counted: the next rounds stay correct.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let lock = e.acquire(b"after-thaw", TTL).await.unwrap();
        let other = engine_with_timeout(urls(&cluster), transport).await;
        assert!(other.try_acquire(b"after-thaw", TTL).await.is_err());
        e.release(lock).await.unwrap();
    }
}

#[tokio::test]
async fn recovers_after_a_node_is_killed_and_restarted() {
    let mut cluster = nodes(3);
    each_transport(urls(&cluster), async |transport, [e]| {
        cluster[0].kill9();
        // two of three still grant
        let lock = e.acquire(b"restart", TTL).await.unwrap();
        e.release(lock).await.unwrap();
        cluster[0].restart();
        cluster[1].kill9();
        // now only nodes 0 (restarted) and 2 are up: the engine must have reconnected to node 0
        let mut granted = None;
        for _ in 0..100 {
            match e.try_acquire(b"restart", TTL).await {
                Ok(lock) => {
                    granted = Some(lock);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        let lock =
            granted.unwrap_or_else(|| panic!("no reconnect to the restarted node ({transport:?})"));
        assert!(cluster[0].exists(b"redlock:{restart}"));
        e.release(lock).await.unwrap();
        cluster[1].restart();
    })
    .await;
}

/// A node whose connection died in silence (no FIN, no RST: a host that lost power, a NAT that forgot
/// the flow) is taken for dead once it owes a reply and answers nothing for a second, and its
/// connection is reopened: its locks land there again within seconds. Without that, TCP would keep
/// the dead connection for about fifteen minutes, every request on it timing out.
#[tokio::test]
async fn a_connection_cut_in_silence_is_reopened_and_its_node_votes_again() {
    let n = nodes(3);
    let proxies = [
        Proxy::start(n[0].port).await.unwrap(),
        Proxy::start(n[1].port).await.unwrap(),
        Proxy::start(n[2].port).await.unwrap(),
    ];
    let e = build(builder().nodes(proxies.iter().map(Proxy::url))).await;
    // Whether a lock taken now reaches node 0 (the acquire returns at a majority: wait for it).
    let lands_on_node_0 = async |i: usize| {
        let resource = format!("cut-{i}");
        let lock = e.acquire(resource.as_bytes(), TTL).await.unwrap();
        let key = format!("redlock:{{{resource}}}");
        let landed = eventually(Duration::from_millis(300), || n[0].exists(key.as_bytes())).await;
        e.release(lock).await.unwrap();
        landed
    };
    assert!(lands_on_node_0(0).await);
    proxies[0].sever();
    // The cut is real: the next lock does not reach node 0, and the majority still grants it.
    assert!(!lands_on_node_0(1).await);
    let cut = Instant::now();
    let mut i = 2;
    while !lands_on_node_0(i).await {
        assert!(
            cut.elapsed() < Duration::from_secs(8),
            "node 0's dead connection was never reopened"
        );
        i += 1;
    }
}

/// A waiter whose node vanished without a word, subscriber connection and all, hears the next
/// release: the subscriber sends a `PING` once it has been quiet for a second, takes the
/// connection for dead when no answer comes, and resubscribes on a new one. Without that it would
/// stay deaf, and this waiter would try again only at the end of its 20 s pause, on a lock
/// connection as dead.
#[tokio::test]
async fn a_waiter_whose_connections_were_cut_in_silence_hears_the_next_release() {
    let n = nodes(1);
    let proxy = Proxy::start(n[0].port).await.unwrap();
    let holder = build(quick(urls(&n), 0)).await;
    let waiter = build(
        builder()
            .nodes([proxy.url()])
            .acquire_timeout(Duration::from_secs(60))
            .retry(100, Duration::from_secs(20), Duration::ZERO),
    )
    .await;
    let held = holder
        .acquire(b"cut-wait", Duration::from_secs(60))
        .await
        .unwrap();
    let task = tokio::spawn(async move {
        let lock = waiter.acquire(b"cut-wait", TTL).await;
        (Instant::now(), lock.map(|_| ()), waiter)
    });
    // The waiter lost its first round and sleeps, subscribed.
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.sever();
    // Time for both of its connections to be found dead and reopened (one to two seconds each).
    tokio::time::sleep(Duration::from_secs(7)).await;
    if task.is_finished() {
        let (_, lock, _) = task.await.unwrap();
        panic!("the waiter ended before the release: {lock:?}");
    }
    let released = Instant::now();
    holder.release(held).await.unwrap();
    let (granted, lock, _waiter) = task.await.unwrap();
    lock.unwrap();
    let after = granted.saturating_duration_since(released);
    assert!(
        after < Duration::from_secs(2),
        "granted {after:?} after the release"
    );
}

#[tokio::test]
async fn in_flight_commands_are_not_replayed_after_a_reconnect() {
    // A node frozen with commands in flight, then killed: those commands fail (they are never sent again
    // on the new connection), and after a restart the node holds none of the old keys.
    let mut cluster = nodes(3);
    let e = engine_with_timeout(urls(&cluster), Transport::Pipeline).await;
    cluster[1].freeze();
    for i in 0..10 {
        let lock = e
            .acquire(format!("replay-{i}").as_bytes(), TTL)
            .await
            .unwrap();
        e.release(lock).await.unwrap();
    }
    cluster[1].restart(); // kill -9 while frozen, start empty on the same port
    tokio::time::sleep(Duration::from_millis(500)).await;
    for i in 0..10 {
        let key = format!("redlock:{{replay-{i}}}");
        assert!(
            !cluster[1].exists(key.as_bytes()),
            "{key} was replayed onto the restarted node"
        );
    }
    let stats = cluster[1].cmd(&[b"INFO", b"commandstats"]);
    assert!(
        !stats.contains("cmdstat_set:"),
        "no SET may reach the restarted node: {stats}"
    );
}

#[tokio::test]
async fn noscript_after_script_flush_recovers() {
    let cluster = nodes(3);
    each_transport(urls(&cluster), async |_transport, [e]| {
        for round in 0..3 {
            for node in &cluster {
                assert_eq!(node.cmd(&[b"SCRIPT", b"FLUSH"]), "OK");
            }
            let mut lock = e.acquire(b"flushed", TTL).await.unwrap();
            e.extend(&mut lock, TTL)
                .await
                .unwrap_or_else(|err| panic!("extend after flush {round}: {err}"));
            for node in &cluster {
                assert_eq!(node.cmd(&[b"SCRIPT", b"FLUSH"]), "OK");
            }
            e.release(lock)
                .await
                .unwrap_or_else(|err| panic!("release after flush {round}: {err}"));
            let gone = || cluster.iter().all(|n| !n.exists(b"redlock:{flushed}"));
            assert!(
                crate::common::eventually(Duration::from_secs(1), gone).await,
                "released after flush {round}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn script_digests_match_script_load() {
    let cluster = nodes(1);
    for (source, sha1) in redlock_engine::__private::all_scripts() {
        assert_eq!(
            cluster[0].cmd(&[b"SCRIPT", b"LOAD", source.as_bytes()]),
            sha1
        );
    }
}
