//! The semaphore checker on synthetic grants: K holders at once pass, K+1 must be reported.

use super::*;
use crate::record::{Fenced, Outcome, Seen, Via, Wrote};

/// A grant of `kind` on `resource` by `holder`, held from `t1` until its release at `rel_start`.
fn held(holder: &str, resource: &str, kind: LockKind, t1: u64, rel_start: u64) -> Grant {
    Grant {
        holder: holder.into(),
        resource: resource.into(),
        ttl_ms: 1,
        drift_ns: 0,
        t0: t1,
        fp: t1,
        t1,
        vu0: 900_000,
        vu: 900_000,
        ext_fp: 0,
        cs_start: t1,
        cs_end: rel_start,
        rel_start,
        rel_fp: rel_start,
        wrote: Wrote::NoCounter,
        ext: Outcome::None,
        rel: Outcome::Ok,
        token: None,
        fenced: Fenced::None,
        kind,
        via: Via::Nodes(1),
        seen: Seen::None,
    }
}

#[test]
fn k_holders_at_once_pass_and_k_plus_one_are_reported() {
    let p2 = LockKind::Permit(2);
    // Two at once, a third only after one of them released (touching: 200 ends as 200 begins).
    let fine = vec![
        held("c0.0", "sem", p2, 100, 200),
        held("c1.0", "sem", p2, 150, 300),
        held("c0.1", "sem", p2, 200, 400),
        held("c1.1", "sem", p2, 310, 500),
    ];
    let c = check(&fine);
    assert_eq!((c.grants, c.crowded, c.most, c.most_k), (4, 0, 2, 2));

    // A third holder while c1.0 and c0.1 still hold: K+1 = 3 at once, reported.
    let mut crowded = fine.clone();
    crowded.push(held("c2.0", "sem", p2, 250, 260));
    let c = check(&crowded);
    assert_eq!((c.crowded, c.most), (1, 3));
    assert!(
        c.examples[0].starts_with("sem (K = 2): c2.0 was granted while 2 held: c1.0"),
        "{:?}",
        c.examples
    );
}

#[test]
fn validity_ends_a_hold_even_without_a_release() {
    let s3 = LockKind::Slot(3);
    // Three slots held; the fourth comes after the first one's validity ended (never released).
    let mut first = held("c0.0", "slots", s3, 100, 0);
    first.vu = 150;
    let grants = vec![
        first.clone(),
        held("c0.1", "slots", s3, 110, 400),
        held("c1.0", "slots", s3, 120, 400),
        held("c1.1", "slots", s3, 160, 400),
    ];
    assert_eq!(check(&grants).crowded, 0);
    // The same fourth grant while the first was still valid: four holders of three slots.
    let mut late = grants;
    late[0].vu = 170;
    let c = check(&late);
    assert_eq!((c.crowded, c.most, c.most_k), (1, 4, 3));
    assert!(c.examples[0].contains("c0.0 (slot for 0.0 ms more)"));
}

#[test]
fn resources_are_counted_apart_and_disagreeing_counts_use_the_smallest() {
    // One holder on each of three resources of K = 1: nobody is crowded.
    let one = LockKind::Permit(1);
    let apart = vec![
        held("a", "x", one, 100, 200),
        held("b", "y", one, 100, 200),
        held("c", "z", one, 100, 200),
    ];
    assert_eq!(check(&apart).crowded, 0);
    // Two callers of one resource, one asking K = 3 and one K = 1: two at once exceed the 1.
    let mixed = vec![
        held("a", "x", LockKind::Permit(3), 100, 200),
        held("b", "x", one, 150, 250),
    ];
    assert_eq!(check(&mixed).crowded, 1);
    // Exclusive grants are the overlap check's, not this one's.
    let exclusive = vec![
        held("a", "x", LockKind::Exclusive, 100, 200),
        held("b", "x", LockKind::Exclusive, 150, 250),
    ];
    assert_eq!(check(&exclusive), Crowding::default());
}
