//! The counting semaphore's acquire timeout covers the local gate and the attempts together: a task
//! that waited at the gate behind another attempt gets only what is left, not a second timeout.
//! Real nodes.

use std::time::Duration;

use crate::common::{attempt, engine_with, nodes, urls};
use redlock_engine::Transport;
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(10);
const TIMEOUT: Duration = Duration::from_millis(1500);

#[tokio::test]
async fn a_task_queued_at_the_gate_times_out_within_one_acquire_timeout() {
    let cluster = nodes(3);
    let holder = crate::common::engine(urls(&cluster), Transport::Pipeline).await;
    let permit = attempt(holder.lock("gated").permits(1), TTL).await.unwrap();
    let e = engine_with(&cluster, |b| {
        b.retry(1000, Duration::from_millis(20), Duration::from_millis(20))
            .acquire_timeout(TIMEOUT)
    })
    .await;
    // K = 1: the first task attempts until its timeout; the second, started a little later, waits
    // at the gate until then and gets the turn with some of its own timeout left.
    let timed = |e: &redlock_engine::Redlock, after: Duration| {
        let e = e.clone();
        async move {
            tokio::time::sleep(after).await;
            let began = Instant::now();
            let result = e.acquire_permit("gated", 1, TTL).await;
            (result.is_err(), began.elapsed())
        }
    };
    let ((first_refused, _), (second_refused, second)) =
        tokio::join!(timed(&e, Duration::ZERO), timed(&e, TIMEOUT / 4));
    assert!(first_refused && second_refused, "the permit stays held");
    // Before the fix the gated task got a fresh timeout once through the gate: it took about
    // 3/4 + 1 of TIMEOUT.
    assert!(
        second < TIMEOUT + TIMEOUT / 4,
        "the gated task took {second:?} for an acquire timeout of {TIMEOUT:?}"
    );
    holder.release(permit).await.unwrap();
}
