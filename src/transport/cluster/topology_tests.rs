//! The slot-map readers on replies as Redis 7.0 sends them, and on hostile ones.

use bytes::Bytes;
use redis_protocol::resp2::types::BytesFrame as F;

use super::*;

fn s(text: &str) -> F {
    F::BulkString(Bytes::copy_from_slice(text.as_bytes()))
}

fn node(port: i64, role: &str) -> F {
    F::Array(vec![
        s("id"),
        s("abc"),
        s("port"),
        F::Integer(port),
        s("ip"),
        s("127.0.0.1"),
        s("endpoint"),
        s("127.0.0.1"),
        s("role"),
        s(role),
        s("health"),
        s("online"),
    ])
}

#[test]
fn cluster_shards_gives_each_master_its_ranges() {
    let reply = F::Array(vec![F::Array(vec![
        s("slots"),
        F::Array(vec![
            F::Integer(0),
            F::Integer(99),
            F::Integer(200),
            F::Integer(300),
        ]),
        s("nodes"),
        F::Array(vec![node(7001, "replica"), node(7000, "master")]),
    ])]);
    let shards = shards(&reply, false).unwrap();
    assert_eq!(
        shards,
        vec![ShardInfo {
            master: ("127.0.0.1".into(), 7000),
            ranges: vec![(0, 99), (200, 300)],
            replicas: vec![("127.0.0.1".into(), 7001)],
        }]
    );
}

#[test]
fn cluster_slots_merges_a_masters_ranges() {
    let entry = |a, b, port| {
        F::Array(vec![
            F::Integer(a),
            F::Integer(b),
            F::Array(vec![s("127.0.0.1"), F::Integer(port), s("id")]),
        ])
    };
    let reply = F::Array(vec![
        entry(0, 10, 7000),
        entry(11, 20, 7001),
        entry(30, 40, 7000),
    ]);
    let shards = slots(&reply).unwrap();
    assert_eq!(shards.len(), 2);
    assert_eq!(shards[0].ranges, vec![(0, 10), (30, 40)]);
}

#[test]
fn hostile_maps_are_refused_not_obeyed() {
    let bad_range = F::Array(vec![F::Array(vec![
        F::Integer(0),
        F::Integer(16384),
        F::Array(vec![s("127.0.0.1"), F::Integer(7000)]),
    ])]);
    assert!(slots(&bad_range).is_err());
    let bad_port = F::Array(vec![F::Array(vec![
        F::Integer(0),
        F::Integer(1),
        F::Array(vec![s("127.0.0.1"), F::Integer(70000)]),
    ])]);
    assert!(slots(&bad_port).is_err());
    assert!(slots(&F::Integer(3)).is_err());
    assert!(shards(&F::Array(vec![F::Array(vec![s("slots")])]), false).is_err());
}
