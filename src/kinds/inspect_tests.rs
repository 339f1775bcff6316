//! Tests of inspect's answer parsing (`crate::engine::inspect`) against the real list of kinds, so
//! they live here, above the engine. An answer's fields after the prelude's four are the kinds'
//! parts in list order: waiters, fence, readers (live, ours, ms left), write intent, permits and
//! their K, fair waiters; the label last.

use std::time::Duration;

use bytes::Bytes;

use crate::engine::inspect::parse;
use crate::engine::report::KeyState;
use crate::error::NodeError;
use crate::protocol::cmd::Reply;
use crate::protocol::spec::LockKind;

fn answer(text: &str) -> Result<KeyState, NodeError> {
    let data = Bytes::copy_from_slice(text.as_bytes());
    parse(Ok(Reply::Data(data)), super::catalog())
}

fn kind(name: &str) -> Option<LockKind> {
    let catalog = super::catalog();
    let spec = catalog.kinds().iter().find(|s| s.name == name);
    Some(LockKind::of(spec.expect("a kind of the list")))
}

#[test]
fn reads_every_field_and_keeps_the_label_whole() {
    let s =
        answer("s|29910|1|x|4985|00000000000000000042|0|0|-2|-2|0|-|0|me@host pid 1|x").unwrap();
    assert!(s.held && s.ours);
    assert_eq!(s.kind, kind("exclusive"));
    assert_eq!(s.remaining, Some(Duration::from_millis(29910)));
    assert_eq!(s.fence, Some(42));
    assert_eq!(s.waiters, Some(Duration::from_millis(4985)));
    assert_eq!(s.label.as_deref(), Some("me@host pid 1|x"));
    let readers = answer("n|-2|0|-|-2|-|2|1|9000|6977|0|-|0|").unwrap();
    assert_eq!(readers.kind, kind("read"));
    assert!(readers.held && readers.ours);
    assert_eq!((readers.readers, readers.our_readers), (2, 1));
    assert_eq!(readers.remaining, Some(Duration::from_millis(9000)));
    assert_eq!(readers.write_intent, Some(Duration::from_millis(6977)));
    let free = answer("n|-2|0|-|-2|-|0|0|-2|-2|0|-|0|").unwrap();
    assert_eq!(free, KeyState::default());
    assert_eq!(
        answer("o|-1|0|-|-2|-|0|0|-2|-2|0|-|0|").unwrap().kind,
        Some(LockKind::FOREIGN)
    );
    assert_eq!(
        answer("s|5|0|?|-2|-|0|0|-2|-2|0|-|0|").unwrap().kind,
        Some(LockKind::FOREIGN)
    );
    assert_eq!(
        answer("s|5|0|Q|-2|-|0|0|-2|-2|0|-|0|").unwrap().kind,
        Some(LockKind::UNKNOWN)
    );
    let sem = answer("s|900|0|?|-2|-|0|0|-2|-2|2|3|0|").unwrap();
    assert_eq!(
        (sem.kind, sem.held, sem.permits, sem.permit_limit),
        (kind("semaphore"), true, 2, Some(3))
    );
    let fair = answer("s|900|1|q|-2|-|0|0|-2|-2|0|-|4|").unwrap();
    assert_eq!(
        (fair.kind, fair.ours, fair.fair_waiters),
        (kind("fair"), true, 4)
    );
}

#[test]
fn anything_else_is_the_node_failing() {
    for text in [
        "",
        "s|1",
        "x|-2|0|-|-2|-|0|0|-2|-2|0|-|0|",
        "s|x|0|x|-2|-|0|0|-2|-2|0|-|0|",
        "n|-2|0|-|-2|-|-1|0|-2|-2|0|-|0|",
    ] {
        assert!(
            matches!(answer(text), Err(NodeError::Protocol(_))),
            "{text:?}"
        );
    }
    assert!(parse(Ok(Reply::Int(1)), super::catalog()).is_err());
    assert!(matches!(
        parse(Err(NodeError::Timeout), super::catalog()),
        Err(NodeError::Timeout)
    ));
}
