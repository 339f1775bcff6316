//! Every node has a data directory of its own, removed when the node goes: a replica's full sync
//! writes `dump.rdb` there, and no node started later may load it.

use testkit::{replica_of, RedisNode};

#[test]
fn two_nodes_do_not_share_a_directory_and_it_is_removed_with_the_node() {
    let a = RedisNode::start();
    let b = RedisNode::start();
    let (dir_a, dir_b) = (a.dir().to_path_buf(), b.dir().to_path_buf());
    assert_ne!(dir_a, dir_b);
    assert!(dir_a.is_dir() && dir_b.is_dir());
    // What the server itself says its directory is.
    let config = a.cmd(&[b"CONFIG", b"GET", b"dir"]);
    assert!(config.ends_with(&*dir_a.to_string_lossy()), "{config}");
    drop(a);
    assert!(!dir_a.exists(), "{} outlived its node", dir_a.display());
    assert!(dir_b.is_dir());
}

#[test]
fn a_replicas_dump_stays_in_its_own_directory() {
    let master = RedisNode::start();
    master.cmd(&[b"SET", b"redlock:{stale}", b"v"]);
    let replica = replica_of(&master, &[]);
    // Redis 6.2's full sync leaves the received RDB as `dump.rdb` in the replica's `--dir` (7.0 with
    // `--save ""` deletes it): write it by hand so the check does not depend on the version.
    assert_eq!(replica.cmd(&[b"SAVE"]), "OK");
    let dump = replica.dir().join("dump.rdb");
    assert!(dump.is_file(), "{} missing", dump.display());
    // A node started now neither sees the file nor loads the replica's keys.
    let fresh = RedisNode::start();
    assert!(!fresh.dir().join("dump.rdb").exists());
    assert_eq!(fresh.cmd(&[b"DBSIZE"]), "0");
    let replica_dir = replica.dir().to_path_buf();
    drop(replica);
    assert!(
        !replica_dir.exists(),
        "{} outlived its node",
        replica_dir.display()
    );
}

#[test]
fn a_restarted_node_comes_back_empty_in_a_fresh_directory() {
    let mut node = RedisNode::start();
    node.cmd(&[b"SET", b"k", b"v"]);
    let before = node.dir().to_path_buf();
    node.restart();
    assert_eq!(node.cmd(&[b"DBSIZE"]), "0");
    assert_ne!(node.dir(), before);
    assert!(!before.exists());
}
