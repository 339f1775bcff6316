//! The native forms' replies read as their scripts' answers.
use super::*;
use crate::protocol::cmd::{Args, Keys};

fn release(notify: bool) -> Native {
    let script = if notify { &RELEASE_NOTIFY } else { &RELEASE };
    let cmd = Cmd::Script {
        script,
        keys: Keys::One(Bytes::from_static(b"k")),
        value: LockValue::ZERO,
        args: Args::NONE,
    };
    Native::of(&cmd).unwrap()
}

fn read(native: &Native, replies: Vec<NodeResult>) -> Answer {
    native.answer(&mut replies.into_iter())
}

#[test]
fn a_release_reads_as_the_script_and_asks_who_holds_it_after_a_zero() {
    let plain = release(false);
    assert_eq!(plain.parts(), 1);
    assert!(matches!(
        read(&plain, vec![Ok(Reply::Int(1))]),
        Answer::Done(Ok(Reply::Int(1)))
    ));
    let Answer::Then(owner) = read(&plain, vec![Ok(Reply::Int(0))]) else {
        panic!("a 0 is asked again")
    };
    assert!(matches!(
        read(&owner, vec![Ok(Reply::Int(0))]),
        Answer::Done(Ok(Reply::Int(0)))
    ));
    assert!(matches!(
        read(&owner, vec![Ok(Reply::Int(1))]),
        Answer::Done(Ok(Reply::Int(-1)))
    ));
    let notify = release(true);
    assert_eq!(notify.parts(), 2);
    let woke = read(&notify, vec![Ok(Reply::Int(1)), Ok(Reply::Int(1))]);
    assert!(matches!(
        woke,
        Answer::DoneThen(Ok(Reply::Int(2)), Native::Publish { .. })
    ));
    let quiet = read(&notify, vec![Ok(Reply::Int(1)), Ok(Reply::Int(0))]);
    assert!(matches!(quiet, Answer::Done(Ok(Reply::Int(1)))));
    let wrong = read(
        &notify,
        vec![
            Err(NodeError::Server("WRONGTYPE x".into())),
            Ok(Reply::Int(0)),
        ],
    );
    assert!(matches!(wrong, Answer::Done(Err(NodeError::Server(_)))));
}

#[test]
fn an_extend_tells_ours_gone_and_taken_from_the_old_value() {
    let value = LockValue::ZERO;
    let lock = Extend {
        key: Bytes::from_static(b"k"),
        value,
        ttl_ms: 5,
    };
    let ours = Ok(Reply::Data(Bytes::copy_from_slice(value.as_bytes())));
    assert_eq!(extended(&lock, ours.clone()), Ok(1));
    assert_eq!(extended(&lock, Ok(Reply::Nil)), Ok(0));
    assert_eq!(
        extended(&lock, Ok(Reply::Data(Bytes::from_static(b"x")))),
        Ok(-1)
    );
    let many = Native::ExtendMany(vec![lock.clone(), lock.clone(), lock].into());
    let replies = vec![
        ours,
        Ok(Reply::Nil),
        Err(NodeError::Server("WRONGTYPE".into())),
    ];
    let Answer::Done(Ok(Reply::Data(codes))) = read(&many, replies) else {
        panic!("one code per lock")
    };
    assert_eq!(&codes[..], b"10-");
    let mut args = Vec::new();
    many.commands(|a| args.push(a.iter().map(|x| x.to_vec()).collect::<Vec<_>>()));
    assert_eq!(args.len(), 3);
    assert_eq!(args[0][0], b"SET");
    assert_eq!(args[0][3], b"IFEQ");
}
