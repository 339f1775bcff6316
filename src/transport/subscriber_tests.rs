//! The subscriber's message delivery, without a server.

use super::*;
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

/// A named message wakes only the subscription of that name; an empty one wakes everyone.
#[test]
fn a_named_message_wakes_only_its_waiter() {
    let hub = Arc::new(Hub {
        channels: Mutex::new(HashMap::new()),
        idle: Idle::default(),
        conns: Vec::new(),
    });
    let notifier = Notifier {
        inner: hub.clone(),
        _stop: CancellationToken::new().drop_guard(),
    };
    let key = Bytes::from_static(b"redlock:{k}");
    let plain = notifier.subscribe(&key);
    let a = notifier.subscribe_named(&key, Bytes::from_static(b"aaaa"));
    let b = notifier.subscribe_named(&key, Bytes::from_static(b"bbbb"));
    let node = NodeAddr::parse("redis://127.0.0.1:1").unwrap();
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
