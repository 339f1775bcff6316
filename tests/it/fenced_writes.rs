//! Fenced writes close the loop: a holder whose lock ran out while it worked cannot overwrite what
//! a later holder wrote, on a Redis store (`FencedStore`) or in SQL (the guide's statement, on a
//! real SQLite database); tokens survive JSON.

use std::time::Duration;

use crate::common::{fresh_nodes, RedisNode};
use redlock_engine::{Redlock, Written};

/// Two holders one after the other: the first's lock runs out before it writes (a pause), the
/// second takes the lock and writes. Returns both tokens.
async fn paused_then_next(redlock: &Redlock, resource: &str) -> (u64, u64) {
    let first = redlock
        .lock(resource)
        .fenced()
        .ttl(Duration::from_millis(300))
        .await
        .unwrap();
    let stale = first.fencing_token().unwrap();
    let _ = first.into_lock(); // not released: it just runs out, as a paused holder's does
    tokio::time::sleep(Duration::from_millis(400)).await;
    let second = redlock.lock(resource).fenced().await.unwrap();
    let fresh = second.fencing_token().unwrap();
    second.release().await.unwrap();
    assert!(fresh > stale);
    (stale, fresh)
}

#[tokio::test]
async fn a_redis_store_refuses_the_paused_holders_late_write() {
    let (_cluster, [redlock]) = fresh_nodes(3).await;
    let store_node = RedisNode::start();
    let store = redlock.fenced_store(&store_node.url()).await.unwrap();
    let (stale, fresh) = paused_then_next(&redlock, "ledger").await;

    assert_eq!(
        store.set("balance", "200", fresh).await.unwrap(),
        Written::Stored
    );
    // The same holder may write again; the paused one may not.
    assert_eq!(
        store.set("balance", "210", fresh).await.unwrap(),
        Written::Stored
    );
    assert_eq!(
        store.set("balance", "100", stale).await.unwrap(),
        Written::Rejected { newer: fresh }
    );
    let (value, token) = store.get("balance").await.unwrap().unwrap();
    assert_eq!((&value[..], token), (&b"210"[..], fresh));
    assert_eq!(store.get("never").await.unwrap(), None);
}

#[tokio::test]
async fn tokens_survive_json_and_the_sql_form_refuses_a_stale_write() {
    let (_cluster, [redlock]) = fresh_nodes(3).await;
    let (stale, fresh) = paused_then_next(&redlock, "account:7").await;
    for token in [stale, fresh] {
        assert!(token < 1 << 53, "{token} is exact as a JSON number");
        let json = serde_json::json!({ "token": token }).to_string();
        let read: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            read["token"].as_f64().unwrap() as u64,
            token,
            "through a double"
        );
    }

    // The guide's statements: the write carries the token in its condition.
    let db = rusqlite::Connection::open_in_memory().unwrap();
    db.execute_batch(
        "CREATE TABLE account (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence INTEGER NOT NULL)",
    )
    .unwrap();
    let write = |balance: i64, token: u64| {
        db.execute(
            "INSERT INTO account (id, balance, fence) VALUES (7, ?1, ?2) \
             ON CONFLICT (id) DO UPDATE SET balance = excluded.balance, fence = excluded.fence \
             WHERE excluded.fence >= account.fence",
            rusqlite::params![balance, token as i64],
        )
        .unwrap()
    };
    assert_eq!(write(200, fresh), 1, "stored");
    assert_eq!(write(100, stale), 0, "the stale write changes no row");
    let (balance, fence): (i64, i64) = db
        .query_row("SELECT balance, fence FROM account WHERE id = 7", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((balance, fence as u64), (200, fresh));
}
