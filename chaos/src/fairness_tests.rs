//! The fairness checker on synthetic calls over 5 nodes: each overtake must be flagged, and the same
//! calls without it (or with the waiter's place lost, given up, or begun after B) must not be.

use super::*;

/// A round at `t` with that many `G`, `Q` and `L` replies.
/// A round seen at `t` that took 5 ns.
fn r(t: u64, yes: u32, taken: u32, gone: u32) -> Round {
    Round {
        t,
        yes,
        taken,
        gone,
        took: 5,
    }
}

fn call(holder: &str, t0: u64, t1: u64, end: FairEnd, rounds: Vec<Round>) -> FairCall {
    FairCall {
        holder: holder.into(),
        resource: "f0".into(),
        t0,
        t1,
        end,
        nodes: 5,
        timeout_ms: 0,
        attempts: (end == FairEnd::Granted).then_some(rounds.len() as u32),
        rounds,
    }
}

/// A enqueued by 10 (queued on all 5), waited, granted at 60; B started at 20, granted at 40.
fn overtaken() -> Vec<FairCall> {
    vec![
        call(
            "c0.0",
            0,
            61,
            FairEnd::Granted,
            vec![r(10, 0, 5, 0), r(50, 0, 5, 0), r(60, 5, 0, 0)],
        ),
        call(
            "c1.0",
            20,
            41,
            FairEnd::Granted,
            vec![r(30, 0, 5, 0), r(40, 5, 0, 0)],
        ),
    ]
}

#[test]
fn a_waiter_granted_before_one_that_queued_first_is_an_overtake() {
    let f = check(&overtaken());
    assert_eq!(
        (f.places, f.contested, f.overtakes, f.overtakes_of_lost),
        (2, 1, 1, 0)
    );
    assert!(
        f.examples[0].starts_with("c0.0's place, complete ")
            && f.examples[0].contains("c1.0 was granted"),
        "{:?}",
        f.examples
    );
    // In arrival order instead: B granted after A's grant round started (at 55).
    let mut calls = overtaken();
    calls[1].rounds = vec![r(30, 0, 5, 0), r(70, 5, 0, 0)];
    calls[1].t1 = 71;
    let f = check(&calls);
    assert_eq!((f.contested, f.overtakes), (1, 0));
    // The overtake again, but on another resource: no pair.
    let mut calls = overtaken();
    calls[1].resource = "f1".into();
    assert_eq!(check(&calls).overtakes, 0);
}

#[test]
fn b_that_began_before_a_completed_may_go_first() {
    let mut calls = overtaken();
    calls[1].t0 = 5;
    assert_eq!(check(&calls).overtakes, 0);
    // B began later but took a new place after a definite requeue (3 nodes lost it) at 12: its place
    // began after 12, still after A's completion at 10: an overtake.
    let mut calls = overtaken();
    calls[1].t0 = 5;
    calls[1].rounds = vec![
        r(8, 0, 5, 0),
        r(12, 0, 2, 3),
        r(30, 0, 5, 0),
        r(40, 5, 0, 0),
    ];
    assert_eq!(check(&calls).overtakes, 1);
    // A requeue that is not definite (2 answers missing, no `L`) does not move B's start bound.
    calls[1].rounds[1] = r(12, 0, 2, 0);
    assert_eq!(check(&calls).overtakes, 0);
}

#[test]
fn a_place_that_never_landed_on_a_majority_is_not_one() {
    // A's only rounds reached 2 nodes: no completed place, nothing to overtake.
    let mut calls = overtaken();
    calls[0].rounds = vec![r(10, 0, 2, 0), r(50, 0, 2, 0), r(60, 3, 0, 0)];
    let f = check(&calls);
    assert_eq!((f.overtakes, f.places), (0, 2));
    // A's place completed only by its attempt at 50 (after B began): no overtake.
    calls[0].rounds = vec![r(10, 0, 2, 0), r(50, 0, 4, 0), r(60, 5, 0, 0)];
    assert_eq!(check(&calls).overtakes, 0);
}

#[test]
fn a_lost_place_is_counted_apart() {
    // A's place was found gone on 3 nodes at 45 (after B's grant at 40): lost, not a violation.
    let mut calls = overtaken();
    calls[0].rounds = vec![
        r(10, 0, 5, 0),
        r(45, 0, 2, 3),
        r(50, 0, 5, 0),
        r(60, 5, 0, 0),
    ];
    let f = check(&calls);
    assert_eq!((f.lost, f.overtakes, f.overtakes_of_lost), (1, 0, 1));
}

#[test]
fn a_waiter_that_gave_up_first_was_not_overtaken() {
    // A timed out: its place lasted at least until t0 + timeout (0 here) and its last round, 35.
    let mut calls = overtaken();
    calls[0].end = FairEnd::TimedOut;
    calls[0].attempts = None;
    calls[0].rounds = vec![r(10, 0, 5, 0), r(35, 0, 5, 0)];
    assert_eq!(check(&calls).overtakes, 0);
    // ... but with a wait of 1 s, it was still waiting when B was granted at 40.
    calls[0].timeout_ms = 1000;
    assert_eq!(check(&calls).overtakes, 1);
    // Cancelled at 38, before B's grant; then at 45, after it.
    calls[0].end = FairEnd::Cancelled;
    calls[0].t1 = 38;
    assert_eq!(check(&calls).overtakes, 0);
    calls[0].t1 = 45;
    assert_eq!(check(&calls).overtakes, 1);
}

#[test]
fn tasks_of_one_process_are_waiters_like_any_other_and_the_tap_is_checked() {
    let mut calls = overtaken();
    calls[1].holder = "c0.1".into();
    assert_eq!(check(&calls).overtakes, 1);
    // A granted call with no round seen makes the checker blind; rounds missing are miscounted.
    calls[1].rounds.clear();
    calls[0].attempts = Some(4);
    let f = check(&calls);
    assert_eq!((f.blind, f.miscounted, f.granted), (1, 1, 2));
    assert_eq!(f.longest_wait_ns, 61);
}

#[test]
fn a_waiter_granted_at_its_second_round_waited_until_that_round_began() {
    // A: enqueue at 10, then (woken) its winning attempt, seen at 60 after 5 ns: A waited until 55.
    let mut calls = overtaken();
    calls[0].rounds = vec![r(10, 0, 5, 0), r(60, 5, 0, 0)];
    calls[0].attempts = Some(2);
    let f = check(&calls);
    assert_eq!((f.contested, f.overtakes), (1, 1));
    // B granted at 57, after A's winning round began at 55: not counted (the bound is that start).
    calls[1].rounds = vec![r(30, 0, 5, 0), r(57, 5, 0, 0)];
    assert_eq!(check(&calls).overtakes, 0);
}

/// A call whose last round did not win was granted by a release round of its own process: its
/// grant counts at its return, and its place lasted at least until its last round.
#[test]
fn a_waiter_granted_by_a_release_counts_as_granted_when_it_returned() {
    // B (c1.0) began at 20, queued at 30 and was granted by a release, returning at 41: before A
    // (queued at 10, granted at 60), an overtake. Returning at 70, after A: none.
    let b = |t1| call("c1.0", 20, t1, FairEnd::Granted, vec![r(30, 0, 5, 0)]);
    let a = overtaken().remove(0);
    let f = check(&[a.clone(), b(41)]);
    assert_eq!((f.contested, f.overtakes), (1, 1));
    let f = check(&[a, b(70)]);
    assert_eq!(f.overtakes, 0);
    // A granted by a release after B's win at 40: from A's own rounds its place is known to last
    // only until its last round (30), before B's grant, so no overtake is claimed (the bound errs
    // towards none)...
    let a = call(
        "c0.0",
        0,
        61,
        FairEnd::Granted,
        vec![r(10, 0, 5, 0), r(30, 0, 5, 0)],
    );
    let b = call(
        "c1.0",
        20,
        41,
        FairEnd::Granted,
        vec![r(35, 0, 5, 0), r(40, 5, 0, 0)],
    );
    assert_eq!(check(&[a.clone(), b.clone()]).overtakes, 0);
    // ... unless its process's previous holder returned after 40 (at 50): that holder's release,
    // which granted A, came later still, and A waited until then.
    let previous = call("c0.1", 0, 50, FairEnd::Granted, vec![r(49, 5, 0, 0)]);
    assert_eq!(check(&[a, b, previous]).overtakes, 1);
}
