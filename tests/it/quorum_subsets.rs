//! Every subset of 5 nodes down (all 32 bitmasks): acquire succeeds iff a majority is up, and a failed
//! attempt leaves no key behind on the nodes that were up.

use std::time::Duration;

use crate::common::{dead_url, engine, nodes, transports, RedisNode};
use redlock_engine::LockError;

#[tokio::test]
async fn acquire_succeeds_iff_a_majority_is_up() {
    let cluster = nodes(5);
    // "Down" nodes are loopback ports nobody listens on: connection refused, as after a crash.
    let dead: Vec<String> = (0..5).map(|_| dead_url()).collect();
    for transport in transports() {
        for mask in 0u32..32 {
            let up: Vec<bool> = (0..5).map(|i| mask & (1 << i) == 0).collect();
            let urls: Vec<String> = (0..5)
                .map(|i| {
                    if up[i] {
                        cluster[i].url()
                    } else {
                        dead[i].clone()
                    }
                })
                .collect();
            let e = engine(urls, transport).await;
            let up_count = up.iter().filter(|u| **u).count();
            let resource = format!("subset-{mask}-{transport:?}");
            let key = format!("redlock:{resource}");
            match e
                .try_acquire(resource.as_bytes(), Duration::from_secs(10))
                .await
            {
                Ok(lock) => {
                    assert!(
                        up_count >= 3,
                        "mask {mask:05b}: granted with only {up_count} nodes up"
                    );
                    assert!(lock.is_valid());
                    e.release(lock).await.unwrap();
                }
                Err(err) => {
                    assert!(
                        up_count < 3,
                        "mask {mask:05b}: refused with {up_count} nodes up: {err}"
                    );
                    assert!(
                        matches!(&err, LockError::QuorumNotReached { failures, .. } if failures.len() >= 3),
                        "mask {mask:05b}: {err:?}"
                    );
                }
            }
            let up_nodes: Vec<&RedisNode> =
                (0..5).filter(|i| up[*i]).map(|i| &cluster[i]).collect();
            let clean = crate::common::eventually(Duration::from_secs(1), || {
                up_nodes.iter().all(|n| !n.exists(key.as_bytes()))
            })
            .await;
            assert!(
                clean,
                "mask {mask:05b}: key left behind on a node that was up"
            );
        }
    }
}
