//! `Config::acquire_timeout` bounds every form that waits as configured, by time alone: with a
//! timeout set, a busy lock is retried until then, however small `retry_count` is.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::{Duration, Instant};

use crate::common::{nodes, urls, RedisNode};
use redlock_engine::{Config, ErrorClass, LockError, LockGuard, Redlock, RenewPolicy};

const TTL: Duration = Duration::from_secs(10);
const TIMEOUT: Duration = Duration::from_millis(1200);

type Attempt<'a> = Pin<Box<dyn Future<Output = Result<(), LockError>> + Send + 'a>>;

/// A named form of acquire and its outcome, without what it got: every outcome this file expects is
/// a timeout, so nothing is held when it ends.
fn form<'a, T, A>(name: &'a str, attempt: A) -> (&'a str, Attempt<'a>)
where
    A: IntoFuture<Output = Result<T, LockError>> + Send + 'a,
    A::IntoFuture: Send,
{
    (name, Box::pin(async move { attempt.await.map(drop) }))
}

/// Three fresh nodes, a holder with the default configuration on them and a waiter with that
/// configuration as `tune` changes it.
async fn holder_and_waiter(
    tune: impl FnOnce(Config) -> Config,
) -> (Vec<RedisNode>, Redlock, Redlock) {
    let cluster = nodes(3);
    let base = crate::common::fresh_config(urls(&cluster));
    let holder = Redlock::new(base.clone()).await.unwrap();
    let waiter = Redlock::new(tune(base)).await.unwrap();
    (cluster, holder, waiter)
}

#[tokio::test]
async fn every_configured_form_waits_until_the_acquire_timeout() {
    // One retry 10 ms apart: the retry count alone would give up after ~20 ms.
    let (_cluster, holder, waiter) = holder_and_waiter(|base| Config {
        acquire_timeout: Some(TIMEOUT),
        retry_count: 1,
        retry_delay: Duration::from_millis(10),
        retry_jitter: Duration::ZERO,
        ..base
    })
    .await;

    // Every resource held by the holder, in the kind its waiters ask for.
    let mut held = Vec::new();
    for r in [
        "plain",
        "short",
        "scoped",
        "owner",
        "renewed",
        "renewed-short",
    ] {
        held.push(holder.lock(r).ttl(TTL).once().await.unwrap());
    }
    for r in ["fenced", "fenced-short"] {
        held.push(holder.lock(r).fenced().ttl(TTL).once().await.unwrap());
    }
    for r in ["read", "read-short", "write", "write-short"] {
        held.push(holder.lock(r).write().ttl(TTL).once().await.unwrap());
    }
    for r in ["fair", "fair-short"] {
        held.push(holder.lock(r).fair().ttl(TTL).once().await.unwrap());
    }
    for r in ["permit", "permit-short", "permit-scoped"] {
        held.push(holder.lock(r).permits(1).ttl(TTL).once().await.unwrap());
    }
    for r in ["slot", "slot-short"] {
        held.push(holder.lock(r).slots(1).ttl(TTL).once().await.unwrap());
    }
    for set in [["m1", "m2"], ["m3", "m4"]] {
        held.push(holder.lock_many(set).ttl(TTL).once().await.unwrap());
    }

    let w = &waiter;
    let owner = w.owner();
    let policy = RenewPolicy::default();
    let forms: Vec<(&str, Attempt<'_>)> = vec![
        form("lock", w.lock("plain").ttl(TTL)),
        form("acquire", w.acquire("short", TTL)),
        form("lock().fenced()", w.lock("fenced").fenced().ttl(TTL)),
        form("acquire_fenced", w.acquire_fenced("fenced-short", TTL)),
        form("lock().read()", w.lock("read").read().ttl(TTL)),
        form("acquire_read", w.acquire_read("read-short", TTL)),
        form("lock().write()", w.lock("write").write().ttl(TTL)),
        form("acquire_write", w.acquire_write("write-short", TTL)),
        form("lock().fair()", w.lock("fair").fair().ttl(TTL)),
        form("acquire_fair", w.acquire_fair("fair-short", TTL)),
        form("lock().permits(1)", w.lock("permit").permits(1).ttl(TTL)),
        form("acquire_permit", w.acquire_permit("permit-short", 1, TTL)),
        form(
            "with_permit",
            w.with_permit("permit-scoped", 1, TTL, |_| async {}),
        ),
        form("lock().slots(1)", w.lock("slot").slots(1).ttl(TTL)),
        form("acquire_slot", w.acquire_slot("slot-short", 1, TTL)),
        form("lock_many", w.lock_many(["m1", "m2"]).ttl(TTL)),
        form("acquire_many", w.acquire_many(&[b"m3", b"m4"], TTL)),
        form("with_lock", w.with_lock("scoped", TTL, |_| async {})),
        form("owner().acquire", owner.acquire("owner", TTL)),
        form(
            "lock().renewed()",
            w.lock("renewed").ttl(TTL).renewed(policy.clone()),
        ),
        form(
            "acquire_renewed",
            w.acquire_renewed("renewed-short", TTL, policy.clone()),
        ),
    ];
    let began = Instant::now();
    let timed = forms.into_iter().map(|(name, attempt)| async move {
        let start = Instant::now();
        let outcome = attempt.await;
        (name, start.elapsed(), outcome)
    });
    let results = futures::future::join_all(timed).await;
    let mut wrong = Vec::new();
    for (name, took, outcome) in results {
        let timed_out = matches!(outcome, Err(LockError::Timeout { .. }));
        let busy = outcome.as_ref().err().map(LockError::class) == Some(ErrorClass::Busy);
        // Gave up at the timeout (not before it: a pause that would outlast it is waited out), not
        // at the retry count; and not long after it.
        if !timed_out || !busy || took < TIMEOUT || took > TIMEOUT * 3 {
            wrong.push(format!("{name}: {outcome:?} after {took:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert!(began.elapsed() < TIMEOUT * 3);
    drop(held);
}

#[tokio::test]
async fn a_lock_freed_before_the_acquire_timeout_is_taken() {
    let (_cluster, holder, waiter) = holder_and_waiter(|base| Config {
        acquire_timeout: Some(Duration::from_secs(5)),
        retry_count: 0,
        notify_releases: false, // the retries alone must find it free
        ..base
    })
    .await;
    let guard = holder.lock("freed").ttl(TTL).once().await.unwrap();
    let release = async {
        tokio::time::sleep(Duration::from_millis(400)).await;
        guard.release().await.unwrap();
    };
    let (_, taken) = tokio::join!(release, waiter.lock("freed").ttl(TTL));
    let guard = taken.expect("retried past retry_count until the lock was free");
    guard.release().await.unwrap();
}

/// The bounded waits below: every retry pause (5 s) outlasts them.
const LIMIT: Duration = Duration::from_millis(800);

/// `waiter` waits up to [`LIMIT`] for `resource`, which `holder` holds and releases halfway
/// through: what it got, and how long it took.
async fn freed_halfway(
    holder: &Redlock,
    waiter: &Redlock,
    resource: &str,
) -> (Result<LockGuard, LockError>, Duration) {
    let guard = holder.lock(resource).ttl(TTL).once().await.unwrap();
    let release = async {
        tokio::time::sleep(LIMIT / 2).await;
        guard.release().await.unwrap();
    };
    let start = Instant::now();
    let (_, taken) = tokio::join!(release, waiter.lock(resource).ttl(TTL).wait_up_to(LIMIT));
    (taken, start.elapsed())
}

/// A pause longer than what is left of the wait is still waited out, listening: a release heard in
/// it is taken. Before, such a wait gave up at once, up to a whole pause before its time.
#[tokio::test]
async fn a_release_heard_in_the_last_pause_of_a_bounded_wait_is_taken() {
    let (_cluster, holder, waiter) = holder_and_waiter(|base| Config {
        retry_delay: Duration::from_secs(5),
        retry_jitter: Duration::ZERO,
        ..base
    })
    .await;
    let (taken, took) = freed_halfway(&holder, &waiter, "last-pause").await;
    let guard = taken.expect("the release in the wait's last pause was heard and taken");
    assert!(took < LIMIT, "{took:?}");
    // Its first round, the retry right after its waiter mark landed, then the round the release
    // woke: a release that beat the second round (a stalled machine) would test nothing here.
    assert!(guard.attempts() >= 3, "won at attempt {}", guard.attempts());
    guard.release().await.unwrap();

    // Nothing heard: the wait ends at its limit, not before.
    let _held = holder.lock("last-pause").ttl(TTL).once().await.unwrap();
    let start = Instant::now();
    let outcome = waiter.lock("last-pause").ttl(TTL).wait_up_to(LIMIT).await;
    assert!(
        matches!(outcome, Err(LockError::Timeout { .. })),
        "{outcome:?}"
    );
    assert!(start.elapsed() >= LIMIT, "{:?}", start.elapsed());
}

/// A waiter that hears no release still gets one last round just before its deadline, when its
/// next pause would outlast the wait: a lock freed meanwhile is taken. Before, such a wait gave up
/// at once (or, listening, slept to the deadline) with no last round.
#[tokio::test]
async fn a_wait_that_hears_nothing_gets_a_last_round_before_its_deadline() {
    let (_cluster, holder, waiter) = holder_and_waiter(|base| Config {
        retry_delay: Duration::from_secs(5),
        retry_jitter: Duration::ZERO,
        notify_releases: false, // deaf: only a round can find it free
        ..base
    })
    .await;
    let (taken, took) = freed_halfway(&holder, &waiter, "last-round").await;
    let guard = taken.expect("the last round before the deadline found the lock free");
    // Taken by that last round, just before the deadline (not by a retry at its pause).
    assert!(took >= LIMIT - Duration::from_millis(50), "{took:?}");
    guard.release().await.unwrap();
}
