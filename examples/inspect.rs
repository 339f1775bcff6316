//! What the nodes hold for a resource, as an operator sees it: `inspect` (one read-only round: the
//! majority's verdict and each node's keys), and `force_release` for a lock whose holder died.
//!
//! Run: `cargo run --example inspect` (starts three redis-server nodes, or set `REDLOCK_NODES`).

use std::time::Duration;

use redlock_engine::{Inspection, Verdict};

mod support;

/// One line per node: held or not, the kind, time left, the holder's label.
fn show(seen: &Inspection) {
    println!(
        "verdict {:?} (held on {}, quorum {})",
        seen.verdict, seen.held_on, seen.quorum
    );
    for node in &seen.nodes {
        match &node.state {
            Ok(s) => println!(
                "  {}: held {} kind {:?} left {:?} label {:?}",
                node.node,
                s.held,
                s.kind,
                s.remaining.map(|d| d.as_secs()),
                s.label
            ),
            Err(e) => println!("  {}: {e}", node.node),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (urls, servers) = support::nodes()?;
    // The operator's engine, and a worker that labels its locks (inspect shows who holds them).
    let operator = support::builder(&urls, &servers).build().await?;
    let worker = support::builder(&urls, &servers)
        .holder_label("billing-worker-7".to_string())
        .build()
        .await?;

    // 1. Nobody holds "invoices:2026-12": free on every node.
    show(&operator.inspect("invoices:2026-12").await?);

    // 2. The worker takes it for 60 s and dies without releasing (here: the plain lock is dropped,
    //    which does not release it; a crash does the same). Others would wait up to 60 s.
    let guard = worker
        .lock("invoices:2026-12")
        .ttl(Duration::from_secs(60))
        .await?;
    drop(guard.into_lock());
    let seen = operator.inspect("invoices:2026-12").await?;
    show(&seen);
    if seen.verdict != Verdict::Held {
        return Err("the abandoned lock should show as held".into());
    }

    // 3. The operator knows the worker is dead (its label says which): force the release. This
    //    deletes the keys whoever holds them — only for a holder known to be gone.
    let forced = operator.force_release("invoices:2026-12").await?;
    println!(
        "force_release: deleted on {} of {} nodes",
        forced.deleted_on,
        forced.nodes.len()
    );
    let seen = operator.inspect("invoices:2026-12").await?;
    show(&seen);
    if seen.verdict != Verdict::Free {
        return Err("still held after force_release".into());
    }
    Ok(())
}
