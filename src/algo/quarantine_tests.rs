//! The quarantine rule's unit tests (`algo/quarantine.rs`), in a file of their own.

use super::*;

fn id(run_id: &str, uptime_s: u64) -> ServerIdentity {
    ServerIdentity {
        run_id: run_id.into(),
        uptime: Duration::from_secs(uptime_s),
        durable: false,
    }
}

/// A quarantine with a 60 s max lifetime that has seen one connect, reporting `run_id` and
/// `uptime_s`: where most cases start.
fn connected(run_id: &str, uptime_s: u64) -> Quarantine {
    let q = Quarantine::new(Some(Duration::from_secs(60)));
    q.on_connect(&id(run_id, uptime_s));
    q
}

#[test]
fn reported_uptime_counts_one_second_less() {
    let max = Duration::from_secs(60);
    let s = Duration::from_secs;
    // A server started at x.99 s reports 1 at x+1.00 s: its real age may be ~0.
    assert_eq!(young_for(max, s(0)), Some(max));
    assert_eq!(
        young_for(max, s(1)),
        Some(max),
        "1 s reported: age may be ~0"
    );
    assert_eq!(young_for(max, s(59)), Some(s(2)), "max - 1");
    assert_eq!(young_for(max, s(60)), Some(s(1)), "max: age may be 59.01 s");
    assert_eq!(young_for(max, s(61)), None, "max + 1: age > max");
    assert_eq!(young_for(max, s(3600)), None);
    assert_eq!(young_for(Duration::ZERO, s(0)), None);
}

#[test]
fn young_nodes_wait_until_old_enough_and_exactly_max_ttl_still_waits() {
    for (uptime_s, votes, why) in [
        (10, false, "10 s old, max lifetime 60 s"),
        (60, false, "60 s reported may be 59.01 s"),
        (61, true, "61 s reported is older than 60 s"),
        (3600, true, "an hour old"),
    ] {
        assert_eq!(connected("a", uptime_s).votes(), votes, "{why}");
    }
}

#[test]
fn a_changed_run_id_quarantines_whatever_the_uptime() {
    let q = connected("a", 3600);
    assert!(q.votes());
    q.on_connect(&id("b", 3600)); // odd uptime reporting, but a different process
    assert!(!q.votes());
}

#[test]
fn unknown_or_suspended_identity_does_not_vote() {
    let q = Quarantine::new(Some(Duration::from_secs(60)));
    assert!(!q.votes(), "never identified");
    q.on_connect(&id("a", 3600));
    assert!(q.votes());
    q.suspend_member("");
    assert!(!q.votes(), "dropped, not yet re-identified");
    q.on_connect(&id("a", 3601));
    assert!(q.votes());
}

#[test]
fn a_cluster_votes_only_when_every_member_is_known_and_old() {
    let q = Quarantine::new(Some(Duration::from_secs(60)));
    q.on_member_connect("m1:7000", &id("a", 3600));
    q.on_member_connect("m2:7001", &id("b", 3600));
    assert!(
        q.votes(),
        "different run_ids on different members are no restart"
    );
    assert_eq!(q.run_id(), None, "no single identity for a cluster");
    q.suspend_member("m2:7001");
    assert!(!q.votes());
    q.on_member_connect("m2:7001", &id("b2", 3600));
    assert!(!q.votes(), "m2 restarted");
    let failover = Quarantine::new(Some(Duration::from_secs(60)));
    failover.on_member_connect("m1:7000", &id("a", 3600));
    failover.suspend_member("m1:7000");
    failover.forget_member("m1:7000");
    failover.on_member_connect("r1:7003", &id("c", 3600));
    assert!(
        failover.votes(),
        "the removed member no longer holds the vote"
    );
    failover.quarantine_now();
    assert!(!failover.votes(), "a topology change quarantines");
}

#[test]
fn a_durable_node_votes_at_once_even_after_a_restart() {
    let q = Quarantine::new(Some(Duration::from_secs(60)));
    let durable = |run_id: &str| ServerIdentity {
        durable: true,
        ..id(run_id, 0)
    };
    q.on_connect(&durable("a"));
    assert!(q.votes(), "young, but its data survives");
    q.on_connect(&durable("b"));
    assert!(q.votes(), "restarted, and its keys came back");
    q.on_connect(&id("c", 0));
    assert!(!q.votes(), "no longer durable: an ordinary restart");
}

#[test]
fn the_durable_claim_is_checked_against_the_settings() {
    let v = |s: &str| Ok::<_, String>(Some(s.to_string()));
    assert_eq!(
        DurableCheck::of(v("yes"), v("always")),
        DurableCheck::Confirmed
    );
    assert!(!DurableCheck::of(v("yes"), v("everysec")).trusted());
    assert!(!DurableCheck::of(v("no"), v("always")).trusted());
    let refused = DurableCheck::of(Err("NOPERM".to_string()), v("always"));
    assert!(matches!(refused, DurableCheck::Unverified(_)) && refused.trusted());
    assert!(DurableCheck::of(Ok::<_, String>(None), v("always")).trusted());
}

#[test]
fn off_means_always_voting() {
    let q = Quarantine::new(None);
    q.on_connect(&id("a", 0));
    q.on_connect(&id("b", 0));
    assert!(q.votes());
    let view = q.view();
    assert!(!view.on && view.until.is_none() && !view.unidentified);
    assert_eq!(view.last.map(|(id, _)| id.run_id), Some("b".into()));
}

#[test]
fn the_view_shows_the_quarantine_and_the_last_identity() {
    let q = Quarantine::new(Some(Duration::from_secs(60)));
    assert!(q.view().unidentified && q.view().last.is_none());
    q.on_connect(&id("a", 10));
    let view = q.view();
    let left = view.until.unwrap() - Instant::now();
    assert!(
        left > Duration::from_secs(50) && left <= Duration::from_secs(51),
        "{left:?}"
    );
    assert_eq!(view.last.unwrap().0.uptime, Duration::from_secs(10));
}
