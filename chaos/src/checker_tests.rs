//! The checker's rules on synthetic logs: each violation must be flagged, and the same logs without
//! it must not be.

use super::*;

fn grant(holder: &str, t1: u64, vu: u64, rel_start: u64) -> Grant {
    Grant {
        holder: holder.into(),
        resource: "r".into(),
        ttl_ms: 1,
        drift_ns: 0,
        t0: t1,
        fp: t1,
        t1,
        vu0: vu,
        vu,
        ext_fp: 0,
        cs_start: t1,
        cs_end: t1 + 1,
        rel_start,
        rel_fp: 0,
        wrote: Wrote::Yes,
        ext: Outcome::None,
        rel: Outcome::Ok,
        token: None,
        fenced: Fenced::None,
        kind: LockKind::Exclusive,
        via: Via::Nodes(1),
        seen: Seen::None,
    }
}

/// A grant of `kind` on `resource` by `holder`, held from `t1` until its release at `rel_start`.
fn held(holder: &str, resource: &str, kind: LockKind, t1: u64, rel_start: u64) -> Grant {
    Grant {
        resource: resource.into(),
        kind,
        ..grant(holder, t1, 900_000, rel_start)
    }
}

fn overlaps_of(grants: &[Grant]) -> Summary {
    summarize(&Logs {
        grants: grants.to_vec(),
        ..Logs::default()
    })
}

#[test]
fn an_accepted_write_below_an_earlier_token_is_stale() {
    let mut logs = Logs::default();
    for (seq, token) in [(1, 10), (2, 12), (3, 11), (4, 12)] {
        let mut g = grant("a", seq, 900_000, 0);
        g.token = Some(token);
        g.fenced = Fenced::Accepted(seq);
        logs.grants.push(g);
    }
    let mut g = grant("b", 9, 900_000, 0);
    g.token = Some(5);
    g.fenced = Fenced::Rejected;
    logs.grants.push(g);
    let s = summarize(&logs);
    assert_eq!(
        (s.fenced_accepted, s.stale_accepted, s.stale_rejected),
        (4, 1, 1)
    );
    // Every grant so far was still valid when the others started: no order to check. One that
    // starts after all of them ended, with a token not above 12, is a violation.
    assert_eq!(s.token_order_violations, 0);
    let mut g = grant("c", 2_000_000, 3_000_000, 0);
    g.token = Some(12);
    logs.grants.push(g);
    assert_eq!(summarize(&logs).token_order_violations, 1);
}

#[test]
fn a_grant_after_release_is_no_overlap_but_one_before_is() {
    let mut logs = Logs::default();
    logs.grants.push(grant("a", 100, 900_000, 200));
    logs.grants.push(grant("b", 300, 900_000, 400));
    assert_eq!(summarize(&logs).overlaps, 0);
    logs.grants.push(grant("c", 350, 900_000, 500));
    let s = summarize(&logs);
    assert_eq!(s.overlaps, 1);
    assert!(s.overlap_examples[0].contains("c was granted"));
}

#[test]
fn a_pair_holds_each_of_its_resources() {
    use LockKind::{Exclusive, Many};
    // {A,B} then {B,C} after its release, {C,A} after that, and C alone while {A,B} is held: fine.
    let fine = [
        held("c0.0", "A+B", Many, 100, 200),
        held("c1.0", "B+C", Many, 300, 400),
        held("c2.0", "A+C", Many, 500, 600),
        held("c3.0", "C", Exclusive, 150, 250),
    ];
    let s = overlaps_of(&fine);
    assert_eq!(s.overlaps, 0, "{:?}", s.overlap_examples);
    // Each pair's counter write counts on both of its resources.
    assert_eq!(s.completed["A"], 2);
    assert_eq!(s.completed["B"], 2);
    assert_eq!(s.completed["C"], 3);

    // {B,C} while {A,B} still holds B: an overlap on B only.
    let s = overlaps_of(&[
        held("c0.0", "A+B", Many, 100, 200),
        held("c1.0", "B+C", Many, 150, 400),
    ]);
    assert_eq!(s.overlaps, 1);
    assert!(s.overlap_examples[0].starts_with("B: c1.0 (holding B+C)"));
    // B alone while {A,B} holds it, and {A,B} while C alone... holds only C: one overlap.
    let s = overlaps_of(&[
        held("c0.0", "A+B", Many, 100, 200),
        held("c3.0", "B", Exclusive, 199, 300),
        held("c2.0", "C", Exclusive, 50, 500),
    ]);
    assert_eq!(s.overlaps, 1);
    assert!(s.overlap_examples[0].starts_with("B: c3.0 was granted while c0.0"));
}

#[test]
fn readers_share_but_never_with_a_writer() {
    use LockKind::{Read, Write};
    let readers = [
        held("c0.0", "w", Read, 100, 300),
        held("c1.0", "w", Read, 150, 400),
        held("c2.0", "w", Read, 200, 250),
        held("c0.1", "w", Write, 400, 500),
        held("c1.1", "w", Read, 500, 600),
    ];
    assert_eq!(overlaps_of(&readers).overlaps, 0);
    for (extra, what) in [
        (held("c3.0", "w", Write, 350, 390), "writer among readers"),
        (held("c3.0", "w", Read, 450, 460), "reader inside a writer"),
        (
            held("c3.0", "w", Read, 90, 410),
            "reader still in when the writer came",
        ),
        (held("c3.0", "w", Write, 420, 430), "writer inside a writer"),
    ] {
        let mut grants = readers.to_vec();
        grants.push(extra);
        let s = overlaps_of(&grants);
        assert_eq!(s.overlaps, 1, "{what}: {:?}", s.overlap_examples);
    }
    // A writer on another resource overlaps nobody here.
    let mut grants = readers.to_vec();
    grants.push(held("c3.0", "v", Write, 120, 600));
    assert_eq!(overlaps_of(&grants).overlaps, 0);
}

#[test]
fn torn_reads_are_counted_late_ones_are_not() {
    let mut grants = Vec::new();
    for (i, seen) in [Seen::Clean, Seen::Torn, Seen::Late, Seen::None]
        .into_iter()
        .enumerate()
    {
        let mut g = held(
            "c0.0",
            "w",
            LockKind::Read,
            100 * i as u64,
            100 * i as u64 + 50,
        );
        g.seen = seen;
        grants.push(g);
    }
    let s = overlaps_of(&grants);
    assert_eq!((s.checked_reads, s.torn_reads, s.overlaps), (2, 1, 0));
}

#[test]
fn tasks_of_one_process_may_not_overlap_but_may_hand_over() {
    // c0.1 takes over c0.0's lock when c0.0 releases it (same validity end): no overlap.
    let first = held("c0.0", "q", LockKind::Exclusive, 100, 200);
    let mut next = held("c0.1", "q", LockKind::Exclusive, 201, 300);
    next.via = Via::Handoff;
    let s = overlaps_of(&[first.clone(), next]);
    assert_eq!((s.overlaps, s.handoffs), (0, 1));
    // A second task of the same process inside c0.0's critical section: an overlap, so marked.
    let s = overlaps_of(&[first, held("c0.2", "q", LockKind::Exclusive, 150, 300)]);
    assert_eq!(s.overlaps, 1);
    assert!(s.overlap_examples[0].ends_with("; same process)"));
}

#[test]
fn validity_beyond_ttl_minus_drift_is_a_lie() {
    let mut g = grant("a", 0, 1_000_000, 10);
    assert!(!lies(&g, None));
    g.vu0 = 1_000_000 + TOLERANCE_NS + 1;
    assert!(lies(&g, None));
}

#[test]
fn a_handed_over_lock_may_claim_what_its_previous_holder_had_and_no_more() {
    // c0.0 acquired at 0 (valid until 1 ms) and hands over at 500 µs to c0.1, whose last poll but
    // one ended at 100 µs, long before: its own bound would be 1.1 ms, the hand-over's 1 ms.
    let ttl = 1_000_000;
    let first = grant("c0.0", 0, ttl, 500_000);
    let next = |vu0: u64| {
        let mut g = grant("c0.1", 500_100, vu0, 600_000);
        g.fp = 100_000;
        g.via = Via::Handoff;
        g
    };
    let lies_in = |grants: Vec<Grant>| {
        summarize(&Logs {
            grants,
            ..Logs::default()
        })
        .validity_lies
    };
    assert_eq!(lies_in(vec![first.clone(), next(ttl)]), 0);
    // Later than the previous holder's end, and than its own poll bound: extended from nowhere.
    assert_eq!(
        lies_in(vec![first.clone(), next(ttl + 100_000 + 2 * TOLERANCE_NS)]),
        1
    );
    // A holder of another process, or of another resource, did not hand it over.
    let mut other = first.clone();
    other.holder = "c1.0".into();
    other.vu = 3 * ttl;
    assert_eq!(lies_in(vec![first.clone(), other, next(2 * ttl)]), 1);
}

#[test]
fn a_fair_grant_may_count_from_its_processs_release_round_and_no_earlier() {
    // c0.0 releases at 500 µs (its release's last poll but one ends at 520 µs) and that round
    // grants c0.1, whose call began at 200 µs and whose last poll but one ended at 300 µs: its
    // own bound is 1.3 ms, the release's 1.52 ms.
    let ttl = 1_000_000;
    let mut first = grant("c0.0", 0, ttl, 500_000);
    first.rel_fp = 520_000;
    let next = |vu0: u64| {
        let mut g = grant("c0.1", 600_000, vu0, 700_000);
        (g.t0, g.fp, g.via) = (200_000, 300_000, Via::Queue(1));
        g
    };
    let lies_in = |grants: Vec<Grant>| {
        summarize(&Logs {
            grants,
            ..Logs::default()
        })
        .validity_lies
    };
    assert_eq!(lies_in(vec![first.clone(), next(1_520_000)]), 0);
    assert_eq!(
        lies_in(vec![first.clone(), next(1_520_000 + 2 * TOLERANCE_NS)]),
        1
    );
    // Not a fair grant, or the release began before the call: its own bound only.
    let mut plain = next(1_520_000);
    plain.via = Via::Nodes(1);
    assert_eq!(lies_in(vec![first.clone(), plain]), 1);
    let mut early = first.clone();
    early.rel_start = 100_000;
    assert_eq!(lies_in(vec![early, next(1_520_000)]), 1);
}

#[test]
fn percentiles() {
    let v: Vec<u64> = (1..=100).collect();
    assert_eq!(percentile(&v, 0.99), 99);
    assert_eq!(percentile(&v, 1.0), 100);
    assert_eq!(percentile(&[], 0.99), 0);
}
