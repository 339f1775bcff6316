//! The operator's calls on real nodes: `inspect` for every kind of lock, ours or another engine's,
//! the holder label, `force_release` (the fence counter survives), `nodes_status`; a node down, a
//! quarantined node set. Cluster, ACL and TLS node sets are in `tests/it/operate_sets.rs`.

use std::time::Duration;

use crate::common::{
    attempt, dead_url, each_transport, engine, engine_with, nodes, transports, urls,
};
use redlock_engine::{LockError, LockKind, NodeError, QuarantineState, Verdict};

const TTL: Duration = Duration::from_secs(10);

#[tokio::test]
async fn inspect_tells_free_from_held_and_ours_from_theirs() {
    let n = nodes(3);
    each_transport(urls(&n), async |transport, [a, b]| {
        let free = a.inspect("inspected").await.unwrap();
        assert_eq!(free.verdict, Verdict::Free, "{transport:?}");
        assert_eq!((free.quorum, free.free_on, free.held_on), (2, 3, 0));
        let lock = a.acquire("inspected", TTL).await.unwrap();
        // The acquire returned at the majority; the last SET may still be on its way.
        assert!(
            crate::common::everywhere(&n, b"redlock:{inspected}", Duration::from_secs(1)).await
        );
        let mine = a.inspect("inspected").await.unwrap();
        let theirs = b.inspect("inspected").await.unwrap();
        assert_eq!(mine.verdict, Verdict::Held);
        assert_eq!(theirs.verdict, Verdict::Held);
        for (m, t) in mine.nodes.iter().zip(&theirs.nodes) {
            let (m, t) = (m.state.as_ref().unwrap(), t.state.as_ref().unwrap());
            assert!(m.ours && !t.ours, "{transport:?}: {m:?} / {t:?}");
            assert_eq!(m.kind.map(LockKind::name), Some("exclusive"));
            let left = m.remaining.unwrap();
            assert!(
                left <= TTL && left > TTL - Duration::from_secs(2),
                "{left:?}"
            );
            assert_eq!((m.readers, m.fence, m.label.as_ref()), (0, None, None));
        }
        // No value in what the caller gets: the node's value is nowhere in the Debug output.
        let value = n[0].cmd(&[b"GET", b"redlock:{inspected}"]);
        let tail: String = value.chars().skip(value.chars().count() - 8).collect();
        assert!(
            !format!("{mine:?}").contains(&tail),
            "the random part leaked"
        );
        a.release(lock).await.unwrap();
        assert_eq!(a.inspect("inspected").await.unwrap().verdict, Verdict::Free);
        assert!(matches!(
            a.inspect("").await,
            Err(LockError::InvalidInput(_))
        ));
    })
    .await;
}

#[tokio::test]
async fn inspect_names_each_kind_with_its_keys() {
    let n = nodes(3);
    let e = engine(urls(&n), transports()[0]).await;
    let fenced = e.acquire_fenced("k-fenced", TTL).await.unwrap();
    let token = fenced.fencing_token().unwrap();
    let seen = e.inspect("k-fenced").await.unwrap();
    let states: Vec<_> = seen
        .nodes
        .iter()
        .map(|x| x.state.clone().unwrap())
        .collect();
    assert!(
        states.iter().filter(|s| s.fence == Some(token)).count() >= 2,
        "{states:?}"
    );
    assert!(
        states
            .iter()
            .filter(|s| s.kind.map(LockKind::name) == Some("fenced"))
            .count()
            >= 2
    );

    let multi = e
        .acquire_many(&[b"{o}:items", b"{o}:pay"], TTL)
        .await
        .unwrap();
    let seen = e.inspect("{o}:pay").await.unwrap();
    assert_eq!(seen.verdict, Verdict::Held);
    assert!(seen
        .nodes
        .iter()
        .any(|x| x.state.as_ref().unwrap().kind.map(LockKind::name) == Some("multi")));

    let r1 = e.acquire_read("k-rw", TTL).await.unwrap();
    let other = engine(urls(&n), transports()[0]).await;
    let r2 = other.acquire_read("k-rw", TTL).await.unwrap();
    // A writer that finds readers records its intent (and is refused).
    assert!(attempt(other.lock("k-rw").write(), TTL).await.is_err());
    let seen = e.inspect("k-rw").await.unwrap();
    assert_eq!(seen.verdict, Verdict::Held);
    let s = seen.nodes[0].state.clone().unwrap();
    assert_eq!(
        (s.kind.map(LockKind::name), s.readers, s.our_readers, s.ours),
        (Some("read"), 2, 1, true)
    );
    assert!(s.remaining.is_some_and(|r| r <= TTL));
    // try_acquire_write withdrew its intent when it gave up: none left.
    assert_eq!(s.write_intent, None);
    n[0].cmd(&[b"SET", b"redlock:{k-rw}:rw:intent", b"7", b"PX", b"5000"]);
    let s = e.inspect("k-rw").await.unwrap().nodes[0]
        .state
        .clone()
        .unwrap();
    assert!(s.write_intent.is_some_and(|t| t <= Duration::from_secs(5)));
    for lock in [fenced, multi, r1] {
        e.release(lock).await.unwrap();
    }
    other.release(r2).await.unwrap();

    // Something that is no lock of this format: another type, another value.
    n[0].cmd(&[b"LPUSH", b"redlock:{foreign}", b"x"]);
    n[1].cmd(&[b"SET", b"redlock:{foreign}", b"short"]);
    let seen = e.inspect("foreign").await.unwrap();
    for x in &seen.nodes[..2] {
        let s = x.state.as_ref().unwrap();
        assert_eq!(
            (s.held, s.kind, s.remaining),
            (true, Some(LockKind::FOREIGN), None)
        );
    }
    assert_eq!(seen.verdict, Verdict::Held);
}

#[tokio::test]
async fn the_holder_label_is_shown_only_for_the_holder_that_wrote_it() {
    let n = nodes(3);
    for transport in transports() {
        let labeled = engine_with(&n, |b| {
            b.transport(transport)
                .holder_label("deploy-42 on host-a".to_string())
        })
        .await;
        let plain = engine(urls(&n), transport).await;
        let lock = labeled.acquire("labeled", TTL).await.unwrap();
        assert!(
            crate::common::everywhere(&n, b"redlock:{labeled}:holder", Duration::from_secs(1))
                .await
        );
        let seen = plain.inspect("labeled").await.unwrap();
        for x in &seen.nodes {
            let s = x.state.as_ref().unwrap();
            assert_eq!(
                s.label.as_deref(),
                Some("deploy-42 on host-a"),
                "{transport:?}"
            );
        }
        let pttl: u64 = n[0]
            .cmd(&[b"PTTL", b"redlock:{labeled}:holder"])
            .parse()
            .unwrap();
        assert!(pttl > 59_000 && pttl <= 60_000, "PX max_ttl: {pttl}");
        labeled.release(lock).await.unwrap();
        // The label key outlives the lock; the next holder (unlabeled) must not be shown with it.
        let next = plain.acquire("labeled", TTL).await.unwrap();
        assert!(
            n[0].exists(b"redlock:{labeled}:holder"),
            "stale label still there"
        );
        let seen = plain.inspect("labeled").await.unwrap();
        assert!(seen
            .nodes
            .iter()
            .all(|x| x.state.as_ref().unwrap().label.is_none()));
        plain.release(next).await.unwrap();
        // A contended labeled acquire is refused like a plain one.
        let held = plain.acquire("labeled", TTL).await.unwrap();
        assert!(matches!(
            labeled.try_acquire("labeled", TTL).await,
            Err(LockError::Contended { .. })
        ));
        plain.release(held).await.unwrap();
    }
    let bad = crate::common::builder()
        .nodes(urls(&n))
        .holder_label("a\nb".to_string())
        .build()
        .await;
    assert!(matches!(bad, Err(LockError::InvalidConfig(_))));
    let long = crate::common::builder()
        .nodes(urls(&n))
        .holder_label("x".repeat(257))
        .build()
        .await;
    assert!(matches!(long, Err(LockError::InvalidConfig(_))));
}

#[tokio::test]
async fn a_renewed_labeled_lock_keeps_its_label_past_max_ttl() {
    let n = nodes(3);
    for transport in transports() {
        let labeled = engine_with(&n, |b| {
            b.transport(transport)
                .max_ttl(Duration::from_secs(2))
                .holder_label("long job".to_string())
        })
        .await;
        let policy = redlock_engine::RenewPolicy::default().every(Duration::from_millis(300));
        let lock = labeled
            .acquire_renewed("long", Duration::from_secs(1), policy)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(3200)).await;
        assert!(!lock.is_lost() && lock.renewals() >= 5, "{transport:?}");
        let seen = labeled.inspect("long").await.unwrap();
        let shown = seen
            .nodes
            .iter()
            .filter(|x| x.state.as_ref().unwrap().label.as_deref() == Some("long job"))
            .count();
        assert!(
            shown >= 2,
            "{transport:?}: the label outlived max_ttl with the lock: {seen:?}"
        );
        lock.release().await.unwrap();
    }
}

#[tokio::test]
async fn labeled_locks_work_every_way_an_exclusive_lock_is_held() {
    let n = nodes(3);
    let e = engine_with(&n, |b| b.holder_label("owner test".to_string())).await;
    let owner = e.owner();
    assert_eq!(owner.acquire("re", TTL).await.unwrap(), 1);
    assert_eq!(owner.acquire("re", TTL).await.unwrap(), 2, "re-entered");
    let label = |r: &'static str| {
        let e = e.clone();
        async move {
            e.inspect(r).await.unwrap().nodes[0]
                .state
                .clone()
                .unwrap()
                .label
        }
    };
    assert_eq!(label("re").await.as_deref(), Some("owner test"));
    assert_eq!(owner.release("re").await.unwrap(), 1);
    assert_eq!(owner.release("re").await.unwrap(), 0);
    let inside = e
        .with_lock("scoped", TTL, |_ctx| label("scoped"))
        .await
        .unwrap();
    assert_eq!(inside.as_deref(), Some("owner test"));
    // A local waiter gets the lock handed over (same value, same label) and releases it.
    let first = e.acquire("handoff", TTL).await.unwrap();
    let waiter = tokio::spawn({
        let e = e.clone();
        async move { e.acquire("handoff", TTL).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    e.release(first).await.unwrap();
    let second = waiter.await.unwrap().unwrap();
    assert_eq!(label("handoff").await.as_deref(), Some("owner test"));
    e.release(second).await.unwrap();
    assert_eq!(e.inspect("handoff").await.unwrap().verdict, Verdict::Free);
}

#[tokio::test]
async fn force_release_breaks_the_lock_but_keeps_the_fence_counter() {
    let n = nodes(3);
    each_transport(urls(&n), async |transport, [holder, operator]| {
        let first = holder.acquire_fenced("stuck", TTL).await.unwrap();
        let t1 = first.fencing_token().unwrap();
        assert!(
            crate::common::everywhere(&n, b"redlock:{stuck}:fence", Duration::from_secs(1)).await
        );
        let done = operator.force_release("stuck").await.unwrap();
        assert_eq!(done.answered, 3);
        assert!(done.deleted_on >= 2, "{done:?}");
        assert!(n.iter().all(|x| !x.exists(b"redlock:{stuck}")));
        assert!(
            n.iter().all(|x| x.exists(b"redlock:{stuck}:fence")),
            "counter kept"
        );
        let second = operator.acquire_fenced("stuck", TTL).await.unwrap();
        assert!(second.fencing_token().unwrap() > t1, "{transport:?}");
        // The broken holder finds someone else's value.
        assert!(matches!(
            holder.release(first).await,
            Err(LockError::NotOwner)
        ));
        operator.release(second).await.unwrap();
        // Nothing held: still fine, nothing deleted.
        assert_eq!(operator.force_release("stuck").await.unwrap().deleted_on, 0);
    })
    .await;
}

#[tokio::test]
async fn a_node_down_is_reported_and_the_others_decide() {
    let n = nodes(2);
    let mut node_urls = urls(&n);
    node_urls.push(dead_url());
    for transport in transports() {
        let e = engine(node_urls.clone(), transport).await;
        let lock = e.acquire("half", TTL).await.unwrap();
        let seen = e.inspect("half").await.unwrap();
        assert_eq!(seen.verdict, Verdict::Held, "{transport:?}");
        assert!(seen.nodes[2].state.is_err());
        let status = e.nodes_status();
        assert!(status[0].connected && status[0].votes && !status[2].connected);
        assert!(status[2].last_error.is_some(), "{:?}", status[2]);
        assert!(!format!("{:?}", status[2]).contains("@"));
        let forced = e.force_release("half").await.unwrap();
        assert_eq!((forced.answered, forced.deleted_on), (2, 2));
        assert!(forced.nodes[2].is_err());
        drop(lock);
    }
    // A majority down: the forced release cannot say it is gone.
    let e = engine(
        vec![urls(&n)[0].clone(), dead_url(), dead_url()],
        transports()[0],
    )
    .await;
    assert!(matches!(
        e.force_release("half").await,
        Err(LockError::QuorumNotReached {
            ok: 1,
            needed: 2,
            ..
        })
    ));
    assert_eq!(e.inspect("half").await.unwrap().verdict, Verdict::Undecided);
}

#[tokio::test]
async fn quarantined_nodes_are_read_but_do_not_decide() {
    let n = nodes(3);
    let plain = engine(urls(&n), transports()[0]).await;
    let lock = plain.acquire("young", TTL).await.unwrap();
    for transport in transports() {
        // Quarantine on over nodes started a moment ago: none of them votes for max_ttl.
        let e = redlock_engine::Redlock::builder()
            .nodes(urls(&n))
            .transport(transport)
            .max_ttl(Duration::from_secs(30))
            .build()
            .await
            .unwrap();
        let seen = e.inspect("young").await.unwrap();
        assert_eq!(seen.verdict, Verdict::Undecided, "{transport:?}");
        for x in &seen.nodes {
            assert!(
                matches!(x.not_voting, Some(NodeError::Quarantined)),
                "{x:?}"
            );
            assert!(x.state.as_ref().unwrap().held, "read all the same");
        }
        for s in e.nodes_status() {
            assert!(!s.votes && s.connected);
            match s.quarantine {
                QuarantineState::For(left) => assert!(
                    left > Duration::from_secs(25) && left <= Duration::from_secs(30),
                    "{left:?}"
                ),
                other => panic!("{transport:?}: {other:?}"),
            }
            let id = s.identity.expect("INFO read at connect");
            assert_eq!(id.run_id.len(), 40);
            assert!(id.uptime < Duration::from_secs(30) && id.read_ago < Duration::from_secs(5));
        }
    }
    let status = plain.nodes_status();
    assert!(status
        .iter()
        .all(|s| s.quarantine == QuarantineState::Off && s.votes));
    assert!(status
        .iter()
        .all(|s| s.rtt.is_some() && s.clock_silenced_for.is_none()));
    plain.release(lock).await.unwrap();
}
