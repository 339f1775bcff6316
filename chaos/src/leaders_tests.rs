//! The election checker on synthetic logs: hand-overs pass; two valid leaders at once, a term going
//! back, a shared term, an observer going back, a phantom, a missed tenure and disagreeing observers
//! must be reported.

use super::*;

const MS: u64 = 1_000_000;

fn lead(holder: &str, term: u64, t1: u64, at: u64, vu: u64, step: Step) -> Lead {
    Lead {
        holder: holder.into(),
        term,
        t1,
        at,
        vu,
        step,
    }
}

/// A tenure of `holder` in `term` from `from` (ms), with work steps valid to `until` (ms), killed.
fn tenure(holder: &str, term: u64, from: u64, until: u64) -> Vec<Lead> {
    let (t1, vu) = (from * MS, until * MS);
    vec![
        lead(holder, term, t1, t1, t1 + 100 * MS, Step::Won),
        lead(holder, term, t1, vu - 500 * MS, vu, Step::Work),
    ]
}

fn seen(observer: &str, term: u64, value: &str, at_ms: u64) -> Observed {
    Observed {
        observer: observer.into(),
        term,
        revision: 1,
        value: value.into(),
        at: at_ms * MS,
    }
}

#[test]
fn hand_overs_pass_and_overlaps_are_reported() {
    // e0 killed (valid to 1,800 ms), e1 granted at 2,000; e1 lost at 3,000 with validity left
    // (not-owner), e2 granted at 3,000 exactly.
    let mut leads = [tenure("e0", 10, 0, 1_800), tenure("e1", 11, 2_000, 3_500)].concat();
    leads.push(lead(
        "e1",
        11,
        2_000 * MS,
        3_000 * MS,
        3_500 * MS,
        Step::lost(&redlock_engine::LockError::NotOwner),
    ));
    leads.extend(tenure("e2", 12, 3_000, 4_000));
    let fine = check(&leads);
    assert_eq!(
        (fine.two_at_once, fine.terms_back, fine.shared_terms),
        (0, 0, 0),
        "{fine:?}"
    );
    assert_eq!(fine.tenures.len(), 3);
    assert_eq!(fine.tenures[1].end, 3_000 * MS);
    assert!(fine.tenures[1].ended.is_some() && fine.tenures[0].ended.is_none());

    // e1 granted while e0 still valid, with a lower term.
    let bad = check(&[tenure("e0", 10, 0, 1_800), tenure("e1", 9, 1_500, 3_000)].concat());
    assert_eq!((bad.two_at_once, bad.terms_back), (1, 1), "{bad:?}");
    assert!(bad.examples[0].contains("still valid"), "{bad:?}");
    // One term, two holders.
    let shared = check(&[tenure("e0", 10, 0, 1_000), tenure("e1", 10, 2_000, 3_000)].concat());
    assert_eq!(shared.shared_terms, 1, "{shared:?}");
    // One candidate granted the same term again after a higher one: two tenures, a term going back.
    let again = check(
        &[
            tenure("e0", 10, 0, 1_000),
            tenure("e1", 11, 1_200, 2_000),
            tenure("e0", 10, 2_200, 3_000),
        ]
        .concat(),
    );
    assert_eq!(again.tenures.len(), 3, "{again:?}");
    assert_eq!((again.shared_terms, again.terms_back), (1, 1), "{again:?}");
}

#[test]
fn observers_must_go_up_see_real_leaders_miss_none_and_agree() {
    let leads = [tenure("e0", 10, 0, 1_800), tenure("e1", 11, 2_000, 3_500)].concat();
    let tenures = check(&leads).tenures;
    let both = ["o0", "o1"];
    let good = vec![
        seen("o0", 10, "e0", 5),
        seen("o1", 10, "e0", 6),
        seen("o0", 11, "e1", 2_002),
        seen("o1", 11, "e1", 2_010),
    ];
    let a = agree(&tenures, &good, &both, 10_000 * MS, u64::MAX);
    assert!(a.holds(), "{a:?}");
    assert_eq!(a.delays_ns, [2 * MS, 5 * MS, 6 * MS, 10 * MS]);

    // o1 goes back to term 10, and sees a term nobody held.
    let mut bad = good.clone();
    bad.push(seen("o1", 10, "e0", 2_500));
    bad.push(seen("o1", 12, "e2", 2_600));
    let a = agree(&tenures, &bad, &both, 10_000 * MS, u64::MAX);
    assert_eq!((a.went_back, a.phantoms), (1, 1), "{a:?}");
    assert!(!a.holds());
    // A term nobody logged, seen only after the stop: a campaign the stop cancelled after it won.
    let mut late = good.clone();
    late.push(seen("o1", 12, "e2", 2_600));
    let a = agree(&tenures, &late, &both, 10_000 * MS, 2_600 * MS);
    assert_eq!(a.phantoms, 0, "{a:?}");
    let a = agree(&tenures, &late, &both, 10_000 * MS, 2_601 * MS);
    assert_eq!(a.phantoms, 1, "{a:?}");
    // o1 misses term 11 (it lasted 1.5 s); the observers disagree.
    let a = agree(&tenures, &good[..3], &both, 10_000 * MS, u64::MAX);
    assert_eq!(a.missed, ["o1: 11"], "{a:?}");
    assert!(a.disagree);
    // ... unless term 11 began after the cut-off.
    let a = agree(&tenures, &good[..3], &both, 1_900 * MS, u64::MAX);
    assert!(a.holds(), "{a:?}");
    // An observer that saw nothing at all misses every tenure.
    let a = agree(&tenures, &good, &["o0", "o1", "o2"], 10_000 * MS, u64::MAX);
    assert_eq!(a.missed.len(), 2, "{a:?}");
}
