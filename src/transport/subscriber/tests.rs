//! The subscriber's message delivery, without a server.

use super::conn::deliver;
use super::*;
use crate::transport::bounded::{Framer, Limits};
use futures::FutureExt;

fn message(channel: &str, payload: &str) -> BytesMut {
    BytesMut::from(
        format!(
            "*3\r\n$7\r\nmessage\r\n${}\r\n{channel}\r\n${}\r\n{payload}\r\n",
            channel.len(),
            payload.len()
        )
        .as_bytes(),
    )
}

/// A subscriber connection to node 2 of a standalone set, for `deliver`.
fn conn() -> Conn {
    Conn {
        addr: NodeAddr::parse("redis://127.0.0.1:1").unwrap(),
        node_bit: 1 << 2,
        out: Mutex::new(BytesMut::new()),
        wake: Notify::new(),
        resubscribing: AtomicUsize::new(0),
    }
}

fn hub() -> (Arc<Hub>, Notifier) {
    let hub = Arc::new(Hub {
        channels: Mutex::new(HashMap::new()),
        idle: Idle::default(),
        conns: Vec::new(),
    });
    let notifier = Notifier {
        inner: hub.clone(),
        heard: 0,
        _stop: CancellationToken::new().drop_guard(),
    };
    (hub, notifier)
}

/// Whether `sub` wakes at the message `buf`.
fn wakes(hub: &Hub, sub: &Subscription, mut buf: BytesMut) -> bool {
    let mut framer = Framer::new(Limits::default());
    let mut n = Box::pin(sub.notify().notified_owned());
    n.as_mut().enable();
    assert!(deliver(hub, &conn(), &mut buf, &mut framer));
    n.now_or_never().is_some()
}

/// A plain lock's named waiter wakes at a message on its own channel, and at an empty one on the
/// key's (a release that cannot name anyone), not at one naming another waiter there.
#[test]
fn a_handoff_waiter_hears_its_channel_and_the_keys_empty_messages() {
    let (hub, notifier) = hub();
    let key = Bytes::from_static(b"redlock:{k}");
    let own = Bytes::from_static(b"redlock:{k}:h:77");
    let sub = notifier.subscribe_with_key(&own, &key, Bytes::from_static(b"77"));
    assert!(wakes(&hub, &sub, message("redlock:{k}:h:77", "77")));
    assert!(wakes(&hub, &sub, message("redlock:{k}", "")));
    assert!(!wakes(&hub, &sub, message("redlock:{k}", "88")));
    assert!(!wakes(&hub, &sub, message("redlock:{k}:h:88", "88")));
    // A grant wakes the waiter and is written down as its node's, until forgotten.
    let grant = "g0123456789abcdef";
    assert!(wakes(&hub, &sub, message("redlock:{k}:h:77", grant)));
    assert_eq!(sub.grants(grant.as_bytes()), 1 << 2);
    assert_eq!(sub.grants(b"g0000000000000000"), 0);
    sub.forget_grants(grant.as_bytes());
    assert_eq!(sub.grants(grant.as_bytes()), 0);
    drop(sub);
    // Both registrations go with it (the channels linger, without names).
    assert!(hub.channels().values().all(|c| c.named.is_empty()));
}

/// A named message wakes only the subscription of that name; an empty one wakes everyone.
#[test]
fn a_named_message_wakes_only_its_waiter() {
    let (hub, notifier) = hub();
    let key = Bytes::from_static(b"redlock:{k}");
    let plain = notifier.subscribe(&key);
    let a = notifier.subscribe_lingering(&key, Bytes::from_static(b"aaaa"));
    let b = notifier.subscribe_lingering(&key, Bytes::from_static(b"bbbb"));
    let node = conn();
    let mut framer = Framer::new(Limits::default());
    let woken = |buf: &mut BytesMut, framer: &mut Framer| {
        let armed: Vec<_> = [&plain, &a, &b]
            .iter()
            .map(|s| {
                let mut n = Box::pin(s.notify().notified_owned());
                n.as_mut().enable();
                n
            })
            .collect();
        assert!(deliver(&hub, &node, buf, framer));
        armed
            .into_iter()
            .map(|n| n.now_or_never().is_some())
            .collect::<Vec<_>>()
    };
    let mut buf = message("redlock:{k}", "bbbb");
    assert_eq!(woken(&mut buf, &mut framer), [false, false, true]);
    let mut buf = message("redlock:{k}", "cccc");
    assert_eq!(woken(&mut buf, &mut framer), [false, false, false]);
    let mut buf = message("redlock:{k}", "");
    assert_eq!(woken(&mut buf, &mut framer), [true, true, true]);
    // A dropped name is forgotten; the others stay.
    drop(a);
    assert_eq!(hub.channels()[&key].named.len(), 1);
}

/// The keepalive's answers are read as the connection being alive, in subscribed mode (an array)
/// and outside it (a simple string, before the first subscription is confirmed), and so is a
/// loading node's refusal of it; any other stray reply still closes the connection.
#[test]
fn pongs_are_read_and_stray_replies_close_the_connection() {
    let (hub, _notifier) = hub();
    let node = conn();
    let mut framer = Framer::new(Limits::default());
    let mut buf = BytesMut::from(
        &b"*2\r\n$4\r\npong\r\n$0\r\n\r\n+PONG\r\n-LOADING Redis is loading the dataset in memory\r\n"[..],
    );
    assert!(deliver(&hub, &node, &mut buf, &mut framer));
    assert!(buf.is_empty());
    for stray in [
        &b"+OK\r\n"[..],
        b"*2\r\n$4\r\nping\r\n$0\r\n\r\n",
        b":1\r\n",
        b"-ERR unknown\r\n",
    ] {
        let mut buf = BytesMut::from(stray);
        assert!(!deliver(&hub, &node, &mut buf, &mut framer), "{stray:?}");
    }
}
