//! What the pipelined transport shares between commands of one write, against real nodes:
//! - coalesced releases (releases queued back to back go out as one script call): each lock must get
//!   exactly the answer, and leave exactly the node state, that its own release would have; the
//!   scripts themselves are checked on a node too;
//! - the clock guard's `TIME`: one per write, not one per acquire.

use std::time::Duration;

use crate::common::{calls, engine, nodes, urls, RedisNode};
use redlock_engine::{LockError, Transport};

const TTL: Duration = Duration::from_secs(10);
const LOCKS: usize = 256;

/// The single release scripts and their many-lock forms, by SHA-1 (see `kinds::exclusive`).
const RELEASE: &str = "73afff61f75cb8d8c5c4e250cc4561d4b66c2e4f";
const RELEASE_NOTIFY: &str = "5d0d65fcbc3025358dd8b8b3a9f82a28ebacd682";
const RELEASE_MANY: &str = "b8673592946f5f669155e2abae9d54824b89e3b2";
const RELEASE_NOTIFY_MANY: &str = "29e160eb4322e02385a49175cf184020aa491ad7";

fn source(sha: &str) -> &'static str {
    redlock_engine::__private::all_scripts()
        .into_iter()
        .find(|(_, s)| *s == sha)
        .map(|(src, _)| src)
        .unwrap_or_else(|| panic!("the engine loads script {sha}"))
}

/// What one key looks like on a node: its type and, for a string, its value.
fn state(node: &RedisNode, key: &[u8]) -> String {
    let ty = node.cmd(&[b"TYPE", key]);
    if ty == "string" {
        format!("string {}", node.cmd(&[b"GET", key]))
    } else {
        ty
    }
}

/// Five keys, one per answer: ours, gone, someone else's, another type, ours with a waiter marked.
fn setup(node: &RedisNode, tag: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let locks: Vec<(Vec<u8>, Vec<u8>)> = (0..5)
        .map(|i| {
            (
                format!("{tag}{i}").into_bytes(),
                format!("v{i}").into_bytes(),
            )
        })
        .collect();
    node.cmd(&[b"SET", &locks[0].0, &locks[0].1]);
    node.cmd(&[b"SET", &locks[2].0, b"someone-else"]);
    node.cmd(&[b"HSET", &locks[3].0, b"f", b"x"]);
    node.cmd(&[b"SET", &locks[4].0, &locks[4].1]);
    node.cmd(&[b"SET", &[&locks[4].0[..], b":wait"].concat(), b"1"]);
    locks
}

#[test]
fn the_many_lock_scripts_answer_each_lock_like_the_single_ones() {
    let node = RedisNode::start();
    for (one, many) in [
        (RELEASE, RELEASE_MANY),
        (RELEASE_NOTIFY, RELEASE_NOTIFY_MANY),
    ] {
        let singles = setup(&node, &format!("one-{one}-"));
        let answers: String = singles
            .iter()
            .map(|(k, v)| {
                match node
                    .cmd(&[b"EVAL", source(one).as_bytes(), b"1", k, v])
                    .as_str()
                {
                    "1" => '1',
                    "2" => '2',
                    "0" => '0',
                    "-1" => '-',
                    e if e.starts_with("ERR") || e.starts_with("WRONGTYPE") => 'e',
                    other => panic!("unexpected single answer {other}"),
                }
            })
            .collect();
        let grouped = setup(&node, &format!("many-{one}-"));
        let mut call: Vec<&[u8]> = vec![b"EVAL", source(many).as_bytes(), b"5"];
        call.extend(grouped.iter().map(|(k, _)| &k[..]));
        call.extend(grouped.iter().map(|(_, v)| &v[..]));
        assert_eq!(node.cmd(&call), answers, "script {many} against {one}");
        let expected = if one == RELEASE { "10-e1" } else { "10-e2" };
        assert_eq!(answers, expected);
        for ((a, _), (b, _)) in singles.iter().zip(&grouped) {
            assert_eq!(state(&node, a), state(&node, b));
        }
    }
}

/// The class of a release's outcome (its error's variant, not its text: a node's error message for
/// a wrong-typed key differs between the single and the coalesced script).
fn class(result: &Result<(), LockError>) -> String {
    match result {
        Ok(()) => "ok".into(),
        Err(e) => format!("{e:?}")
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or_default()
            .to_owned(),
    }
}

/// Acquires `LOCKS` locks named `tag{i}` and then spoils some on the nodes, four ways: left alone,
/// someone else's on nodes 0 and 1, gone everywhere, another type on node 0.
async fn spoiled_locks(
    e: &redlock_engine::Redlock,
    cluster: &[RedisNode],
    tag: &str,
) -> Vec<redlock_engine::Lock> {
    let mut locks = Vec::new();
    for i in 0..LOCKS {
        let resource = format!("{tag}{i}");
        locks.push(e.acquire(resource.as_bytes(), TTL).await.unwrap());
        let key = format!("redlock:{{{resource}}}").into_bytes();
        match i % 4 {
            1 => {
                for node in &cluster[..2] {
                    node.cmd(&[b"SET", &key, b"someone-else"]);
                }
            }
            2 => {
                for node in cluster {
                    node.cmd(&[b"DEL", &key]);
                }
            }
            3 => {
                cluster[0].cmd(&[b"DEL", &key]);
                cluster[0].cmd(&[b"HSET", &key, b"f", b"x"]);
            }
            _ => {}
        }
    }
    locks
}

#[tokio::test]
async fn a_burst_of_releases_answers_like_releases_one_at_a_time() {
    let cluster = nodes(3);
    let e = engine(urls(&cluster), Transport::Pipeline).await;
    let one_at_a_time = spoiled_locks(&e, &cluster, "seq").await;
    let mut sequential = Vec::new();
    for lock in one_at_a_time {
        sequential.push(class(&e.release(lock).await));
    }
    let burst = spoiled_locks(&e, &cluster, "burst").await;
    let before = calls(&cluster[2], "evalsha");
    let together: Vec<String> = futures::future::join_all(burst.into_iter().map(|l| e.release(l)))
        .await
        .iter()
        .map(class)
        .collect();
    let calls = calls(&cluster[2], "evalsha") - before;
    assert_eq!(together, sequential);
    assert!(
        together.iter().any(|c| c == "ok") && together.iter().any(|c| c != "ok"),
        "both outcomes are exercised: {together:?}"
    );
    // Node 2 got one release per lock; queued back to back they share calls.
    assert!(
        calls as usize * 4 <= LOCKS,
        "{calls} script calls for {LOCKS} releases on node 2"
    );
    // Releases return at their majority; give the last node's replies a moment to land.
    let settled = |i: usize, node: &RedisNode| {
        state(node, format!("redlock:{{seq{i}}}").as_bytes())
            == state(node, format!("redlock:{{burst{i}}}").as_bytes())
    };
    let same = crate::common::eventually(Duration::from_secs(2), || {
        (0..LOCKS).all(|i| cluster.iter().all(|node| settled(i, node)))
    })
    .await;
    for i in 0..LOCKS {
        for node in &cluster {
            let seq = state(node, format!("redlock:{{seq{i}}}").as_bytes());
            let burst = state(node, format!("redlock:{{burst{i}}}").as_bytes());
            assert!(same, "lock {i} on node {}: {seq} vs {burst}", node.url());
            assert_eq!(seq, burst, "lock {i} on node {}", node.url());
        }
    }
}

#[tokio::test]
async fn a_flushed_script_cache_resends_a_coalesced_release_once() {
    let cluster = nodes(3);
    let e = engine(urls(&cluster), Transport::Pipeline).await;
    let mut locks = Vec::new();
    for i in 0..64 {
        locks.push(
            e.acquire(format!("flush{i}").as_bytes(), TTL)
                .await
                .unwrap(),
        );
    }
    for node in &cluster {
        node.cmd(&[b"SCRIPT", b"FLUSH"]);
    }
    let results = futures::future::join_all(locks.into_iter().map(|l| e.release(l))).await;
    for (i, r) in results.iter().enumerate() {
        assert!(r.is_ok(), "lock {i}: {r:?}");
    }
    // A release returns once a majority confirmed it; the last node's resend may still be on the
    // wire, so its key goes a moment later.
    let gone = crate::common::eventually(Duration::from_secs(2), || {
        (0..64).all(|i| {
            cluster
                .iter()
                .all(|node| !node.exists(format!("redlock:{{flush{i}}}").as_bytes()))
        })
    })
    .await;
    assert!(gone, "every key released on every node");
}

#[tokio::test]
async fn a_node_killed_under_a_burst_fails_its_members_and_the_majority_still_releases() {
    let mut cluster = nodes(3);
    let e = engine(urls(&cluster), Transport::Pipeline).await;
    let mut locks = Vec::new();
    for i in 0..64 {
        locks.push(e.acquire(format!("kill{i}").as_bytes(), TTL).await.unwrap());
    }
    // Frozen first, so the groups are written and in flight when the node dies.
    cluster[0].freeze();
    let releases = futures::future::join_all(locks.into_iter().map(|l| e.release(l)));
    let kill = async {
        tokio::time::sleep(Duration::from_millis(30)).await;
        cluster[0].kill9();
    };
    let (results, ()) = futures::join!(releases, kill);
    for (i, r) in results.iter().enumerate() {
        assert!(r.is_ok(), "lock {i}: {r:?}");
        for node in &cluster[1..] {
            assert!(!node.exists(format!("redlock:{{kill{i}}}").as_bytes()));
        }
    }
}

#[tokio::test]
async fn a_burst_of_acquires_reads_each_clock_once_per_write_not_once_per_acquire() {
    let cluster = nodes(3);
    let e = engine(urls(&cluster), Transport::Pipeline).await;
    let before = calls(&cluster[2], "time");
    let acquires = (0..LOCKS).map(|i| {
        let e = &e;
        async move { e.acquire(format!("clock{i}").as_bytes(), TTL).await }
    });
    let locks = futures::future::join_all(acquires).await;
    let times = calls(&cluster[2], "time") - before;
    assert!(locks.iter().all(Result::is_ok));
    // At least one (the guard is on by default), far fewer than one per acquire.
    assert!(
        times >= 1 && times as usize * 4 <= LOCKS,
        "{times} TIME calls for {LOCKS} acquires on node 2"
    );
    for lock in locks.into_iter().flatten() {
        e.release(lock).await.unwrap();
    }
}

#[tokio::test]
async fn a_node_answering_a_coalesced_release_with_the_wrong_count_fails_only_its_own_votes() {
    use testkit::hostile::{bulk, normal, Action, Hostile};
    // Answers every SET like Redis, and every many-lock release with one character, whatever the
    // number of locks: a node out of step with the call, not with the stream.
    let hostile = Hostile::start(|cmd| {
        let many = [RELEASE_MANY, RELEASE_NOTIFY_MANY]
            .iter()
            .any(|sha| cmd.get(1).is_some_and(|a| a == sha.as_bytes()));
        if many {
            Action::Send(bulk(b"1"))
        } else {
            Action::Send(normal(cmd))
        }
    });
    let cluster = nodes(2);
    let mut all = urls(&cluster);
    all.push(hostile.url());
    let e = engine(all, Transport::Pipeline).await;
    let mut locks = Vec::new();
    for i in 0..64 {
        locks.push(e.acquire(format!("odd{i}").as_bytes(), TTL).await.unwrap());
    }
    let results = futures::future::join_all(locks.into_iter().map(|l| e.release(l))).await;
    for (i, r) in results.iter().enumerate() {
        assert!(r.is_ok(), "lock {i}: {r:?}");
        for node in &cluster {
            assert!(!node.exists(format!("redlock:{{odd{i}}}").as_bytes()));
        }
    }
}
