//! Node URL parsing and redaction.

use super::*;

#[test]
fn parses_full_and_short_forms() {
    let a = NodeAddr::parse("redis://user:p%40ss@127.0.0.1:7001/3").unwrap();
    assert_eq!((a.host.as_str(), a.port, a.db), ("127.0.0.1", 7001, 3));
    assert_eq!(a.username.as_deref(), Some("user"));
    assert_eq!(a.password.as_deref(), Some("p@ss"));
    let s = NodeAddr::parse("rediss://cache.internal:6380").unwrap();
    assert!(s.tls && s.port == 6380);
    assert!(!a.tls);
    let b = NodeAddr::parse("redis://localhost").unwrap();
    assert_eq!(
        (b.port, b.db, b.username, b.password),
        (6379, 0, None, None)
    );
    let c = NodeAddr::parse("redis://:secret@[::1]:7000/").unwrap();
    assert_eq!((c.host.as_str(), c.port), ("::1", 7000));
    assert_eq!((c.username, c.password.as_deref()), (None, Some("secret")));
    assert_eq!(c.topology, Topology::Standalone);
}

#[test]
fn parses_cluster_and_sentinel_node_sets() {
    let c = NodeAddr::parse("redis-cluster://u:p@10.0.0.1:7000?node=10.0.0.2:7001&node=[::1]:7002")
        .unwrap();
    assert_eq!(c.topology, Topology::Cluster);
    assert_eq!((c.host.as_str(), c.port), ("10.0.0.1", 7000));
    assert_eq!(
        c.more_hosts,
        vec![("10.0.0.2".into(), 7001), ("::1".into(), 7002)]
    );
    assert_eq!(c.to_string(), "redis-cluster://10.0.0.1:7000/0");
    let s = NodeAddr::parse(
        "rediss-sentinel://s1/2?sentinelServiceName=locks&node=s2:26380&sentinelPassword=s%40nt",
    )
    .unwrap();
    assert_eq!(
        s.topology,
        Topology::Sentinel {
            service: "locks".into(),
            username: None,
            password: Some("s@nt".into()),
        }
    );
    assert!(s.tls && s.port == 26379 && s.db == 2);
    let shown = format!("{:?}", s.topology);
    assert!(
        !shown.contains("s@nt") && shown.contains("\"***\""),
        "{shown}"
    );
    assert_eq!(s.more_hosts, vec![("s2".into(), 26380)]);
    assert_eq!(
        s.to_string(),
        "rediss-sentinel://s1:26379/2?sentinelServiceName=locks"
    );
}

#[test]
fn parses_the_durable_claim() {
    let durable = |url: &str| NodeAddr::parse(url).unwrap().durable;
    assert!(!durable("redis://h:1") && !durable("redis://h:1?durable=false"));
    assert!(durable("redis://h:1?durable=true") && durable("rediss://u:p@h:1/2?durable=1"));
}

#[test]
fn rejects_bad_urls_without_leaking_passwords() {
    for bad in [
        "http://x:1",
        "redis://:1",
        "redis://h:0",
        "redis://h:99999",
        "redis://h:1/x",
        "",
        "redis://h:1?node=h:2",
        "redis-cluster://h:1/3",
        "redis-cluster://h:1?nodes=h:2",
        "redis-sentinel://h:1",
        "redis-sentinel://h:1?sentinelServiceName=",
        "unix:///tmp/redis.sock",
        "redis://h:1?durable=maybe",
        "redis-cluster://h:1?durable=true",
        "redis-sentinel://h:1?sentinelServiceName=m&durable=true",
    ] {
        assert!(NodeAddr::parse(bad).is_err(), "{bad}");
    }
    let err = NodeAddr::parse("redis://u:hunter2@h:1/x").unwrap_err();
    assert!(!err.contains("hunter2"), "{err}");
    let err = NodeAddr::parse("default:hunter2@127.0.0.1:6379").unwrap_err();
    assert!(!err.contains("hunter2"), "{err}");
    let err = NodeAddr::parse("redis-sentinel://u:hunter2@h:1?sentinelPassword=hunter3&bogus=1")
        .unwrap_err();
    assert!(
        !err.contains("hunter2") && !err.contains("hunter3"),
        "{err}"
    );
}

#[test]
fn redaction_hides_passwords_that_hold_url_separators() {
    for (url, secret) in [
        ("redis://u:hunter2@h:1/0", "hunter2"),
        ("redis://:hunter2@h:1", "hunter2"),
        ("redis://u:hun?ter2@h:1", "ter2"),
        ("redis://u:hun/ter2@h:1/3", "ter2"),
        ("redis://u:hun@ter2@h:1", "ter2"),
        ("u:hunter2@h:1", "hunter2"),
        (
            "redis-sentinel://h:1?sentinelPassword=hun&ter2&sentinelServiceName=m",
            "ter2",
        ),
        (
            "redis-sentinel://h:1?sentinelServiceName=m&sentinelPassword=a@ter2",
            "ter2",
        ),
        (
            "redis-sentinel://u:p1x@h:1?sentinelPassword=s@ter2&node=h:2",
            "ter2",
        ),
        // A misspelt or unknown parameter may be a password too.
        (
            "redis-sentinel://h:1?sentinelServiceName=m&sentinelpassword=ter2",
            "ter2",
        ),
        ("redis://h:1?password=ter2", "ter2"),
        // No scheme, and `://` inside the password.
        ("u:p://ter2@h:1", "ter2"),
    ] {
        let shown = redact(url);
        assert!(
            !shown.contains(secret) && shown.contains("***"),
            "{url} -> {shown}"
        );
    }
    assert_eq!(redact("redis://u:p@h:1/2"), "redis://u:***@h:1/2");
    assert_eq!(
        redact("redis-sentinel://h:1?sentinelPassword=x&node=h:2"),
        "redis-sentinel://h:1?sentinelPassword=***&node=h:2"
    );
    assert_eq!(redact("redis://user@h:1"), "redis://user@h:1");
    assert_eq!(redact("redis://h:1"), "redis://h:1");
    assert_eq!(
        redact("redis-sentinel://h:1?sentinelServiceName=m&node=h:2&durable=true"),
        "redis-sentinel://h:1?sentinelServiceName=m&node=h:2&durable=true"
    );
}
