//! Leader election (`redlock.election(name)`): campaign, leader, proclaim, resign and observe on
//! real nodes; a leader cut off from the nodes (its renewals stopped) replaced within a TTL, its
//! late write refused by a `FencedStore`; and a run under node faults (kill -9, SIGSTOP, a restart
//! without data, a clock stepped forward, a leader cut off) checked for the guarantees: never two
//! valid leaderships at once, terms strictly increasing, every observer seeing the same terms in
//! order, none going back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redlock_engine::{Leader, LockError, Redlock, Written};
use testkit::clock::SteppableNode;
use testkit::proxy::Mode;
use testkit::{nodes, urls, Proxy, RedisNode};
use tokio::time::Instant;

/// An engine on `urls`: quarantine off (the nodes were started for the test), short pauses.
async fn engine(urls: Vec<String>) -> Redlock {
    Redlock::builder()
        .nodes(urls)
        .quarantine(false)
        .retry(10, Duration::from_millis(20), Duration::from_millis(20))
        .connect_timeout(Duration::from_millis(500))
        .build()
        .await
        .expect("engine builds")
}

/// Every key on `node`.
fn keys(node: &RedisNode) -> Vec<String> {
    let mut keys: Vec<String> = node
        .cmd_str(&["KEYS", "*"])
        .split_whitespace()
        .map(str::to_string)
        .collect();
    keys.sort();
    keys
}

fn shown(leader: &Leader) -> (String, u64, u64) {
    (
        String::from_utf8_lossy(&leader.value).into_owned(),
        leader.term,
        leader.revision,
    )
}

/// Collects what an observer reports until the test reads it.
fn follow(redlock: &Redlock, name: &str) -> Arc<Mutex<Vec<Leader>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut changes = redlock.election(name).observe().unwrap();
    let into = seen.clone();
    tokio::spawn(async move {
        while let Some(leader) = changes.next().await {
            into.lock().unwrap().push(leader);
        }
    });
    seen
}

async fn until(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    check()
}

#[tokio::test]
async fn campaign_leader_proclaim_resign_and_observe() {
    let cluster = nodes(3);
    let a = engine(urls(&cluster)).await;
    let b = engine(urls(&cluster)).await;
    let seen = follow(&b, "sched");
    let election = a.election("sched").ttl(Duration::from_secs(2));
    assert_eq!(b.election("sched").leader().await.unwrap(), None);

    let first = election.campaign("a:1").await.unwrap();
    let t1 = first.term();
    assert!(t1 > 1_760_000_000_000_000 && t1 < 1 << 53, "{t1}");
    let leader = b.election("sched").leader().await.unwrap().unwrap();
    assert_eq!(shown(&leader), ("a:1".into(), t1, 1));
    let busy = b.election("sched").campaign("b:1").once().await;
    assert!(busy.as_ref().is_err_and(LockError::is_busy), "{busy:?}");

    // Proclaim: a new value in the same term, a higher revision.
    first.proclaim("a:2").await.unwrap();
    assert_eq!((first.value(), first.revision()), ("a:2".into(), 2));
    let leader = b.election("sched").leader().await.unwrap().unwrap();
    assert_eq!(shown(&leader), ("a:2".into(), t1, 2));

    // Resign: no leader, nothing left but the fence counter.
    first.resign().await.unwrap();
    assert_eq!(b.election("sched").leader().await.unwrap(), None);
    // The resignation returned at a majority: the last node may still be running it.
    let only_the_fence = || {
        cluster
            .iter()
            .all(|node| keys(node) == ["redlock:{sched}:fence"])
    };
    if !until(Duration::from_secs(2), only_the_fence).await {
        for node in &cluster {
            assert_eq!(keys(node), ["redlock:{sched}:fence"], "{}", node.url());
        }
    }

    // The next leader: a higher term; a dropped leadership resigns in the background.
    let second = b.election("sched").campaign("b:1").await.unwrap();
    let t2 = second.term();
    assert!(t2 > t1);
    assert!(
        until(Duration::from_secs(2), || seen.lock().unwrap().len() == 3).await,
        "{:?}",
        seen.lock().unwrap()
    );
    let reported: Vec<_> = seen.lock().unwrap().iter().map(shown).collect();
    assert_eq!(
        reported,
        [
            ("a:1".into(), t1, 1),
            ("a:2".into(), t1, 2),
            ("b:1".into(), t2, 1)
        ]
    );
    drop(second);
    assert!(
        until(Duration::from_secs(2), || cluster
            .iter()
            .all(|n| keys(n) == ["redlock:{sched}:fence"]))
        .await
    );
    assert_eq!(a.election("sched").leader().await.unwrap(), None);
}

#[tokio::test]
async fn bad_input_is_refused_before_anything_is_sent() {
    let cluster = nodes(3);
    let redlock = engine(urls(&cluster)).await;
    let invalid_input = |r: Result<_, LockError>, what: &str| {
        assert!(matches!(r, Err(LockError::InvalidInput(_))), "{what}");
    };
    let long_name = "n".repeat(2000);
    for name in ["", long_name.as_str()] {
        let election = redlock.election(name);
        invalid_input(election.campaign("v").await.map(drop), "campaign name");
        invalid_input(election.leader().await.map(drop), "leader name");
        invalid_input(election.observe().map(drop), "observe name");
    }
    let election = redlock.election("jobs");
    let long_value = vec![b'v'; 64 * 1024 + 1];
    for value in [&b""[..], &long_value, b"a\0b"] {
        let refused = election.campaign(value).await.map(drop);
        match refused {
            Err(LockError::InvalidInput(why)) => assert!(why.contains("value"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
    // Too few nodes for an election to survive a node's failure.
    for few in [1, 2] {
        let small = engine(urls(&cluster[..few])).await;
        match small.election("jobs").campaign("v").await.map(drop) {
            Err(LockError::InvalidConfig(why)) => assert!(why.contains("at least 3"), "{why}"),
            other => panic!("{few} nodes: {other:?}"),
        }
    }
    for node in &cluster {
        assert_eq!(keys(node), Vec::<String>::new(), "{}", node.url());
    }

    // A bad proclaim changes nothing: the leader keeps its value.
    let leadership = election.campaign("v1").await.unwrap();
    invalid_input(leadership.proclaim("").await, "proclaim empty");
    invalid_input(leadership.proclaim(&long_value).await, "proclaim long");
    let leader = election.leader().await.unwrap().unwrap();
    assert_eq!(shown(&leader), ("v1".into(), leadership.term(), 1));
    leadership.resign().await.unwrap();
}

/// The leader's engine reaches the nodes through proxies, set to drop every byte: its renewals
/// stop, its leadership ends with its validity, and a waiting campaign wins right after, with a
/// higher term; the cut-off leader's late write is refused by the store.
#[tokio::test]
async fn a_leader_cut_off_is_replaced_within_a_ttl_and_its_late_write_refused() {
    const TTL: Duration = Duration::from_secs(1);
    let cluster = nodes(3);
    let store_node = RedisNode::start();
    let mut proxies = Vec::new();
    for node in &cluster {
        proxies.push(Proxy::start(node.port).await.unwrap());
    }
    let cut_off = engine(proxies.iter().map(Proxy::url).collect()).await;
    let next = engine(urls(&cluster)).await;
    let watcher = engine(urls(&cluster)).await;
    let seen = follow(&watcher, "cron");

    let old = cut_off
        .election("cron")
        .ttl(TTL)
        .campaign("old")
        .await
        .unwrap();
    let old_store = cut_off.fenced_store(&store_node.url()).await.unwrap();
    assert_eq!(
        old_store.set("cron:last", "old", old.term()).await.unwrap(),
        Written::Stored
    );
    let campaign = tokio::spawn(async move {
        let election = next.election("cron").ttl(TTL);
        let won = election.campaign("new").await;
        (won.map(|l| (Instant::now(), l)), next)
    });
    tokio::time::sleep(TTL / 2).await;
    assert!(!campaign.is_finished(), "elected while the leader renews");

    for proxy in &proxies {
        proxy.set(Mode::Drop);
    }
    let cut = Instant::now();
    let (won, next) = campaign.await.unwrap();
    let (elected, new) = won.unwrap();
    let failover = elected - cut;
    eprintln!("election::cut_off: new leader {failover:?} after the cut (TTL {TTL:?})");
    assert!(new.term() > old.term());
    assert!(failover <= TTL + Duration::from_millis(500), "{failover:?}");
    // The old leadership's validity ended before the new one began.
    let why = tokio::time::timeout(TTL, old.lost()).await.unwrap();
    assert!(matches!(why, LockError::Lost), "{why:?}");
    assert!(
        old.valid_until() <= elected,
        "two valid leaderships at once"
    );
    assert!(!old.is_valid());

    // The new leader writes with its term; the old one, late, is refused.
    let store = next.fenced_store(&store_node.url()).await.unwrap();
    assert_eq!(
        store.set("cron:last", "new", new.term()).await.unwrap(),
        Written::Stored
    );
    assert_eq!(
        old_store.set("cron:last", "old", old.term()).await.unwrap(),
        Written::Rejected { newer: new.term() }
    );
    assert!(
        until(Duration::from_secs(2), || seen.lock().unwrap().len() == 2).await,
        "{:?}",
        seen.lock().unwrap()
    );
    let terms: Vec<u64> = seen.lock().unwrap().iter().map(|l| l.term).collect();
    assert_eq!(terms, [old.term(), new.term()]);
    new.resign().await.unwrap();
}

/// One leadership as its holder saw it: valid from `granted` (when its campaign returned) to
/// `end` (its resignation, or the end of its validity when lost).
#[derive(Debug, Clone)]
struct Held {
    term: u64,
    candidate: usize,
    granted: Instant,
    end: Instant,
}

/// Candidates campaign over and over, each holding for a while then resigning, while nodes fail
/// one after another; two observers follow. Quarantine on (with a short `max_ttl`), as for real
/// nodes: the restarted node must not vote while it may have forgotten a lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_node_faults_never_two_leaders_and_observers_agree() {
    const TTL: Duration = Duration::from_secs(1);
    const MAX_TTL: Duration = Duration::from_secs(2);
    const CANDIDATES: usize = 3;
    let mut cluster: Vec<RedisNode> = nodes(4);
    let stepped = SteppableNode::start();
    let mut all = urls(&cluster);
    all.push(stepped.url());
    let build = |urls: Vec<String>| {
        Redlock::builder()
            .nodes(urls)
            .max_ttl(MAX_TTL)
            .retry(10, Duration::from_millis(20), Duration::from_millis(30))
            .connect_timeout(Duration::from_millis(500))
            .build()
    };
    // Each candidate through proxies of its own, to cut it off.
    let mut proxies: Vec<Vec<Proxy>> = Vec::new();
    let mut candidates = Vec::new();
    let ports: Vec<u16> = cluster
        .iter()
        .map(|n| n.port)
        .chain([stepped.port])
        .collect();
    for _ in 0..CANDIDATES {
        let mut own = Vec::new();
        for &port in &ports {
            own.push(Proxy::start(port).await.unwrap());
        }
        candidates.push(build(own.iter().map(Proxy::url).collect()).await.unwrap());
        proxies.push(own);
    }
    let observers: Vec<Redlock> = futures::future::join_all((0..2).map(|_| build(all.clone())))
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let seen: Vec<_> = observers.iter().map(|o| follow(o, "lead")).collect();

    // Candidates start once every engine counts the nodes just started (the quarantine's end is
    // read from their uptime, in whole seconds): an observer that cannot count them yet cannot
    // see a leader either.
    tokio::time::sleep(MAX_TTL + Duration::from_millis(1200)).await;
    let held = Arc::new(Mutex::new(Vec::<Held>::new()));
    let leader_now = Arc::new(Mutex::new(None::<usize>));
    let stop = tokio_util::sync::CancellationToken::new();
    let mut tasks = Vec::new();
    for (i, redlock) in candidates.into_iter().enumerate() {
        let (held, leader_now, stop) = (held.clone(), leader_now.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let election = redlock.election("lead").ttl(TTL);
            while !stop.is_cancelled() {
                let campaign = election
                    .campaign(format!("c{i}"))
                    .wait_up_to(Duration::from_secs(2));
                let Ok(leadership) = (tokio::select! {
                    won = campaign => won,
                    _ = stop.cancelled() => break,
                }) else {
                    continue;
                };
                let granted = Instant::now();
                *leader_now.lock().unwrap() = Some(i);
                let hold = Duration::from_millis(200 + fastrand::u64(0..600));
                // Told it is lost: it leads no longer from then on (a loss found before the
                // validity ends, by a renewal or a node's clock jump, is followed by the
                // resignation below: the next leader may come before the old validity's end).
                let end = tokio::select! {
                    _ = leadership.lost() => Instant::now(),
                    _ = tokio::time::sleep(hold) => Instant::now(),
                    _ = stop.cancelled() => Instant::now(),
                };
                *leader_now.lock().unwrap() = None;
                held.lock().unwrap().push(Held {
                    term: leadership.term(),
                    candidate: i,
                    granted,
                    end: end.min(leadership.valid_until()),
                });
                let _ = leadership.resign().await;
            }
        }));
    }

    let t0 = Instant::now();
    let phase = |what: &str| eprintln!("election::faults: {:?}: {what}", t0.elapsed());
    let count = || held.lock().unwrap().len();
    tokio::time::sleep(Duration::from_secs(2)).await;
    phase(&format!("{} leaderships with every node up", count()));
    cluster[0].kill9();
    tokio::time::sleep(Duration::from_secs(2)).await;
    phase(&format!("{} after node 0 was killed", count()));
    cluster[1].freeze();
    tokio::time::sleep(Duration::from_secs(2)).await;
    cluster[1].thaw();
    phase(&format!("{} after node 1 was frozen 2 s", count()));
    cluster[0].restart();
    let restarted = Instant::now();
    // Each engine counts the restarted node again one max_ttl after it saw it back, so a leader
    // elected on it by a candidate that saw it first may show on too few nodes an observer counts:
    // leaderships until both observers count it again are not required to be seen.
    let counted = |o: &Redlock| {
        let node = &o.nodes_status()[0];
        node.connected && node.votes
    };
    let observers_count_it = until(MAX_TTL * 3, || observers.iter().all(counted)).await;
    assert!(
        observers_count_it,
        "the observers never counted node 0 again"
    );
    let quarantined = restarted..Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    phase(&format!("{} after node 0 restarted empty", count()));
    let clock_steps = testkit::server::skip_unless(
        "election::clock step",
        testkit::server::Needs::ImmediateClock,
    );
    if clock_steps {
        stepped.step(3_600_000);
        tokio::time::sleep(Duration::from_secs(2)).await;
        phase(&format!("{} after node 4's clock stepped 1 h", count()));
    }
    // Cut the leader of the moment off: its renewals stop, another takes over.
    let mut failover = None;
    for _ in 0..40 {
        let Some(leader) = *leader_now.lock().unwrap() else {
            // Between two leaderships (a busy machine can make that gap long).
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let before = count();
        proxies[leader].iter().for_each(|p| p.set(Mode::Drop));
        let cut = Instant::now();
        eprintln!("election::faults: {:?}: leader {leader} cut off", cut - t0);
        let handed = until(TTL * 3, || {
            held.lock()
                .unwrap()
                .iter()
                .skip(before)
                .any(|h| h.candidate != leader && h.granted > cut)
        })
        .await;
        proxies[leader].iter().for_each(|p| p.set(Mode::Pass));
        if handed {
            let next = held
                .lock()
                .unwrap()
                .iter()
                .filter(|h| h.granted > cut)
                .map(|h| h.granted)
                .min();
            failover = next.map(|at| at - cut);
        }
        break;
    }
    phase(&format!(
        "{} after the leader was cut off (failover: {failover:?} at TTL {TTL:?})",
        count()
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.cancel();
    for task in tasks {
        task.await.unwrap();
    }

    // Never two valid leaderships at once; terms strictly increasing in grant order.
    let mut held = held.lock().unwrap().clone();
    held.sort_by_key(|h| h.granted);
    assert!(held.len() >= 8, "too few leaderships: {held:?}");
    let history = || -> Vec<_> {
        held.iter()
            .map(|h| (h.term, h.candidate, h.granted - t0, h.end - h.granted))
            .collect()
    };
    for pair in held.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            b.term > a.term,
            "term went back: {a:?} then {b:?}: {:?}",
            history()
        );
        assert!(
            b.granted >= a.end,
            "two valid leaders: {a:?} and {b:?}: {:?}",
            history()
        );
    }
    // Every observer saw the same leaders, in term order, each as its holder published it: every
    // leadership that lasted long enough to be read (one that ended at once, as the run stopped,
    // may be missed).
    let lasting: Vec<u64> = held
        .iter()
        .filter(|h| h.end - h.granted >= Duration::from_millis(150))
        .filter(|h| !(h.granted < quarantined.end && h.end > quarantined.start))
        .map(|h| h.term)
        .collect();
    for (i, seen) in seen.iter().enumerate() {
        let all_seen = || {
            let seen = seen.lock().unwrap();
            lasting.iter().all(|t| seen.iter().any(|l| l.term == *t))
        };
        if !until(Duration::from_secs(3), all_seen).await {
            let held: Vec<_> = held
                .iter()
                .map(|h| (h.term, h.candidate, h.granted - t0, h.end - h.granted))
                .collect();
            let terms: Vec<u64> = seen.lock().unwrap().iter().map(|l| l.term).collect();
            panic!("observer {i} missed a leadership: held {held:?}, observed {terms:?}");
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sequences: Vec<Vec<u64>> = seen
        .iter()
        .map(|s| s.lock().unwrap().iter().map(|l| l.term).collect())
        .collect();
    // A leader shown that no candidate was told of: a campaign that won and published, then was
    // dropped by the stop, or did not hear its publication confirmed in time (a busy machine) and
    // resigned. Rare: two at most.
    let mut untold = Vec::new();
    for (seen, terms) in seen.iter().zip(&sequences) {
        assert!(terms.windows(2).all(|w| w[1] > w[0]), "{terms:?}");
        for leader in seen.lock().unwrap().iter() {
            match held.iter().find(|h| h.term == leader.term) {
                Some(h) => assert_eq!(leader.value, format!("c{}", h.candidate)),
                None => {
                    let ours = (0..CANDIDATES).any(|i| leader.value == format!("c{i}"));
                    assert!(ours, "observed a value no candidate ran with: {leader:?}");
                    untold.push(leader.term);
                }
            }
        }
    }
    untold.sort_unstable();
    untold.dedup();
    assert!(
        untold.len() <= 2,
        "observed terms never granted: {untold:?}: {:?}",
        history()
    );
    assert_eq!(sequences[0], sequences[1], "the observers disagree");
    let start = held[0].granted;
    let missed: Vec<_> = held
        .iter()
        .filter(|h| !sequences[0].contains(&h.term))
        .map(|h| (h.granted - start, h.end - h.granted))
        .collect();
    eprintln!(
        "election::faults: {} leaderships, observers saw {} of them (missed, as (start, held): \
         {missed:?}), failover {failover:?}",
        held.len(),
        sequences[0].len()
    );
    // Within the cut leader's TTL (its keys expire at most that long after its last renewal),
    // plus time for a busy machine: a waiter that slept through it would take its whole wait.
    assert!(
        failover.is_some_and(|f| f <= TTL * 2),
        "no takeover within two TTLs of the cut: {failover:?}"
    );
}
