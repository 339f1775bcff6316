//! The clock-jump rule's unit tests (`algo/clock.rs`), in a file of their own.

use super::*;

fn at(base: Instant, ms: u64) -> Instant {
    base + Duration::from_millis(ms)
}

fn sample(base: Instant, node_ms: i64, sent: u64, received: u64) -> Sample {
    Sample {
        node_us: 1_700_000_000_000_000 + node_ms * 1000,
        sent: at(base, sent),
        received: at(base, received),
    }
}

/// How the rule judges the step from `a` to `b` with the tests' 1 % drift bound and [`SLACK`].
fn step(a: Sample, b: Sample) -> Step {
    judge(a, b, 0.01, SLACK)
}

/// A watch with the tests' 1 % drift bound and [`SLACK`] that holds a jumped node out for `hold`.
fn guarded(hold: Duration) -> ClockWatch {
    ClockWatch::new(Some(GuardSettings {
        drift: 0.01,
        slack: SLACK,
        hold,
    }))
}

/// Samples every 80 ms through a watch: what the pipelined connection feeds it when idle.
fn watch_over(steps: &[(u64, i64)]) -> Vec<Step> {
    let watch = guarded(Duration::from_secs(60));
    let t = Instant::now();
    steps
        .iter()
        .map(|&(local_ms, node_ms)| watch.observe(sample(t, node_ms, local_ms, local_ms + 1)))
        .collect()
}

#[test]
fn frequent_samples_catch_a_big_jump_at_once_but_not_a_small_step() {
    // A 5 ms step between samples 80 ms apart: within what half a second's drift allows.
    let small = watch_over(&[(0, 0), (80, 80), (160, 165), (240, 245), (600, 605)]);
    assert!(small.iter().all(|v| *v == Step::Steady), "{small:?}");
    // A 100 s step: caught by the very next sample, 80 ms later.
    let big = watch_over(&[(0, 0), (80, 80), (160, 100_160)]);
    assert!(matches!(big[2], Step::Forward(d) if d > Duration::from_secs(99)));
}

#[test]
fn a_fast_clock_is_caught_within_a_window_of_frequent_samples() {
    // 5 % fast: 4 ms ahead per 80 ms, each step alone below the allowance, together above it.
    let steps: Vec<(u64, i64)> = (0..10).map(|i| (i * 80, (i * 84) as i64)).collect();
    let verdicts = watch_over(&steps);
    let first = verdicts.iter().position(|v| matches!(v, Step::Forward(_)));
    assert!(first.is_some_and(|i| i <= 8), "{verdicts:?}");
}

#[test]
fn a_clock_in_step_is_steady_whatever_the_queueing() {
    let t = Instant::now();
    let a = sample(t, 0, 0, 1);
    // 1 s later, the node ran TIME anywhere within a 300 ms round trip.
    for node_ms in [1000, 1150, 1299] {
        let b = sample(t, node_ms, 1000, 1300);
        assert_eq!(step(a, b), Step::Steady, "{node_ms}");
    }
}

#[test]
fn a_step_beyond_the_window_and_drift_is_a_jump() {
    let t = Instant::now();
    let a = sample(t, 0, 0, 1);
    // Widest local gap 1001 ms; 1 % drift and 2 ms slack allow 1013 ms.
    assert_eq!(step(a, sample(t, 1013, 1000, 1001)), Step::Steady);
    assert!(matches!(
        step(a, sample(t, 1015, 1000, 1001)),
        Step::Forward(d) if d <= Duration::from_millis(2)
    ));
    assert!(matches!(
        step(a, sample(t, 31_000, 1000, 1001)),
        Step::Forward(d) if d > Duration::from_secs(29)
    ));
    // Narrowest local gap 999 ms; the node must have advanced at least ~987 ms.
    assert_eq!(step(a, sample(t, 988, 1000, 1001)), Step::Steady);
    assert!(matches!(
        step(a, sample(t, 900, 1000, 1001)),
        Step::Backward(_)
    ));
    assert!(matches!(
        step(a, sample(t, -5000, 1000, 1001)),
        Step::Backward(d) if d > Duration::from_secs(5)
    ));
}

#[test]
fn a_forward_jump_stops_the_votes_for_the_hold_and_later_samples_judge_from_it() {
    let t = Instant::now();
    let hold = Duration::from_secs(60);
    let watch = guarded(hold);
    assert_eq!(watch.observe(sample(t, 0, 0, 1)), Step::Steady);
    assert!(watch.votes());
    assert!(matches!(
        watch.observe(sample(t, 60_000, 10, 11)),
        Step::Forward(_)
    ));
    assert!(!watch.votes(), "a jumped node does not vote");
    // The next sample is judged against the jumped one: steady again, still held.
    assert_eq!(watch.observe(sample(t, 60_020, 30, 31)), Step::Steady);
    assert!(!watch.votes());
    let off = ClockWatch::new(None);
    off.observe(sample(t, 0, 0, 1));
    assert_eq!(off.observe(sample(t, 60_000, 10, 11)), Step::Steady);
    assert!(off.votes() && !off.enabled());
}

#[test]
fn a_lock_is_held_while_its_unjumped_grantors_are_a_quorum() {
    let log = Arc::new(JumpLog::new(5));
    let majority = |n: usize| n / 2 + 1;
    let watch = |i| {
        let w = guarded(Duration::from_secs(60));
        w.report_to(log.clone(), i);
        w
    };
    let (n2, n4) = (watch(2), watch(4));
    let t = Instant::now();
    let a = log.mark();
    let held_by_012 = 0b00111;
    let held_by_0124 = 0b10111;
    assert!(log.still_held(held_by_012, a, majority));
    n4.observe(sample(t, 0, 0, 1));
    n4.observe(sample(t, 60_000, 10, 11));
    assert!(
        log.still_held(held_by_012, a, majority),
        "n4 did not grant it"
    );
    n2.observe(sample(t, 0, 0, 1));
    n2.observe(sample(t, 60_000, 10, 11));
    assert!(
        !log.still_held(held_by_012, a, majority),
        "n2 granted it and jumped"
    );
    assert!(
        !log.still_held(held_by_0124, a, majority),
        "n2 and n4 both jumped"
    );
    assert!(
        log.still_held(0b01111, a, majority),
        "n0, n1, n3 are still three"
    );
    assert!(
        !log.still_held(0b01111, a, |_| 4),
        "a permit needing four of five nodes is not held on three"
    );
    let later = log.mark();
    assert!(
        log.still_held(held_by_012, later, majority),
        "granted after both jumps"
    );
}

#[test]
fn a_slow_skew_within_the_drift_bound_is_steady() {
    let t = Instant::now();
    let a = sample(t, 0, 0, 0);
    // 0.5 % fast or slow over 100 s, with a 1 % bound.
    for node_ms in [100_500, 99_500] {
        let b = sample(t, node_ms, 100_000, 100_000);
        assert_eq!(step(a, b), Step::Steady, "{node_ms}");
    }
}
