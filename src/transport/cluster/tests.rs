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

#[test]
fn a_redirect_names_its_target_by_the_last_colon() {
    use super::router::split_target;
    assert_eq!(
        split_target("127.0.0.1:7001"),
        Some(("127.0.0.1".into(), 7001))
    );
    assert_eq!(split_target("[::1]:7001"), Some(("::1".into(), 7001)));
    assert_eq!(split_target("::1:7001"), Some(("::1".into(), 7001)));
    assert_eq!(split_target("host:99999"), None, "not a port");
    assert_eq!(split_target("nohost"), None);
}
