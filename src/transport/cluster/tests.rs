//! Unit tests of the cluster router's pure parts (the real cluster is in `tests/it/cluster.rs`).

use super::map::slot_of;
use crate::algo::value::LockValue;
use crate::protocol::cmd::Cmd;

#[test]
fn a_command_routes_by_its_first_keys_hash_tag() {
    let cmd = |key: &'static [u8]| Cmd::SetNxPx {
        key: bytes::Bytes::from_static(key),
        value: LockValue::ZERO,
        ttl_ms: 1000,
    };
    assert_eq!(
        slot_of(&cmd(b"redlock:{a}")),
        slot_of(&cmd(b"other{a}:fence"))
    );
    assert_eq!(
        slot_of(&cmd(b"foo")),
        Some(12182),
        "CRC16 of foo, mod 16384"
    );
    assert_eq!(slot_of(&Cmd::InfoServer), None);
}
