//! Tests of the bounded framing: every case the issue names, agreement with `redis-protocol` on real
//! replies, and a random search (plain `fastrand`, seeded, bounded) for inputs that panic, recurse or
//! buffer past the bound.

use super::*;
use redis_protocol::resp2::decode::decode_bytes_mut;

const SMALL: Limits = Limits { max_size: 1 << 16 };

fn scan_all(bytes: &[u8]) -> Result<Scan, Violation> {
    scan(bytes, &SMALL)
}

/// Real replies of the commands the engine sends.
fn real_replies() -> Vec<Vec<u8>> {
    let mut info = b"$4000\r\n".to_vec();
    info.extend_from_slice(&[b'x'; 4000]);
    info.extend_from_slice(b"\r\n");
    vec![
        b"+OK\r\n".to_vec(),
        b"$-1\r\n".to_vec(),
        b":1\r\n".to_vec(),
        b":-1\r\n".to_vec(),
        b":0\r\n".to_vec(),
        b"$3\r\n+17\r\n".to_vec(),
        b"$40\r\n73afff61f75cb8d8c5c4e250cc4561d4b66c2e4f\r\n".to_vec(),
        b"-NOSCRIPT No matching script. Please use EVAL.\r\n".to_vec(),
        b"*3\r\n$9\r\nsubscribe\r\n$3\r\nabc\r\n:1\r\n".to_vec(),
        b"*3\r\n$7\r\nmessage\r\n$3\r\nabc\r\n$0\r\n\r\n".to_vec(),
        b"*0\r\n".to_vec(),
        b"*-1\r\n".to_vec(),
        info,
    ]
}

#[test]
fn real_replies_scan_complete_at_their_length_and_incomplete_before() {
    for reply in real_replies() {
        assert_eq!(
            scan_all(&reply),
            Ok(Scan::Complete(reply.len())),
            "{reply:?}"
        );
        let mut doubled = reply.clone();
        doubled.extend_from_slice(&reply);
        assert_eq!(scan_all(&doubled), Ok(Scan::Complete(reply.len())));
        // A reply split at every byte boundary is incomplete until its last byte.
        for cut in 0..reply.len() {
            assert_eq!(scan_all(&reply[..cut]), Ok(Scan::Incomplete), "cut {cut}");
        }
    }
}

/// What a `TIME` reply means, read with the reference decoder.
fn time_of(items: &[redis_protocol::resp2::types::BytesFrame]) -> Option<i64> {
    use redis_protocol::resp2::types::BytesFrame as F;
    let num = |f: &F| match f {
        F::BulkString(b) if !b.is_empty() && b.iter().all(u8::is_ascii_digit) => {
            std::str::from_utf8(b).ok()?.parse::<i64>().ok()
        }
        _ => None,
    };
    match items {
        [s, u] => {
            let (s, u) = (num(s)?, num(u)?);
            (u < 1_000_000).then_some(s * 1_000_000 + u)
        }
        _ => None,
    }
}

#[test]
fn reads_time_replies_and_nothing_else_as_time() {
    let r = |b: &[u8]| {
        Framer::new(SMALL)
            .next_reply(&mut BytesMut::from(b))
            .unwrap()
            .unwrap()
    };
    assert_eq!(
        r(b"*2\r\n$10\r\n1700000000\r\n$6\r\n123456\r\n"),
        Ok(Reply::Time(1_700_000_000_123_456))
    );
    assert_eq!(
        r(b"*2\r\n$1\r\n5\r\n$1\r\n7\r\n"),
        Ok(Reply::Time(5_000_007))
    );
    for other in [
        &b"*2\r\n$1\r\n5\r\n$7\r\n1000000\r\n"[..],
        b"*2\r\n$1\r\n5\r\n$2\r\n-7\r\n",
        b"*2\r\n$1\r\n5\r\n:7\r\n",
        b"*3\r\n$1\r\n5\r\n$1\r\n7\r\n$1\r\n7\r\n",
        b"*1\r\n$1\r\n5\r\n",
        b"*2\r\n$0\r\n\r\n$1\r\n7\r\n",
    ] {
        assert_eq!(r(other), Ok(Reply::Other), "{other:?}");
    }
}

#[test]
fn agrees_with_redis_protocol_on_real_replies() {
    for reply in real_replies() {
        let mut theirs = BytesMut::from(&reply[..]);
        let (frame, _, _) = decode_bytes_mut(&mut theirs).unwrap().unwrap();
        let mut ours = BytesMut::from(&reply[..]);
        let got = Framer::new(SMALL).next_reply(&mut ours).unwrap().unwrap();
        use redis_protocol::resp2::types::BytesFrame as F;
        let expected = match frame {
            F::SimpleString(s) if &s[..] == b"OK" => Ok(Reply::Ok),
            F::SimpleString(s) => Ok(Reply::Status(s)),
            F::BulkString(s) => Ok(Reply::Data(s)),
            F::Integer(i) => Ok(Reply::Int(i)),
            F::Null if reply[0] == b'$' => Ok(Reply::Nil),
            F::Array(ref items) if time_of(items).is_some() => {
                Ok(Reply::Time(time_of(items).unwrap()))
            }
            F::Null | F::Array(_) => Ok(Reply::Other),
            F::Error(e) => Err(NodeError::Server(e.to_string())),
        };
        assert_eq!(got, expected, "{reply:?}");
        assert!(ours.is_empty());
    }
}

#[test]
fn deep_nesting_is_refused_at_the_bound_without_recursion() {
    let deep = b"*1\r\n".repeat(100_000);
    assert_eq!(scan(&deep, &Limits::default()), Err(Violation::TooDeep));
    let mut ok = b"*1\r\n".repeat(MAX_DEPTH);
    ok.extend_from_slice(b":1\r\n");
    assert_eq!(scan_all(&ok), Ok(Scan::Complete(ok.len())));
    let mut over = b"*1\r\n".repeat(MAX_DEPTH + 1);
    over.extend_from_slice(b":1\r\n");
    assert_eq!(scan_all(&over), Err(Violation::TooDeep));
}

#[test]
fn huge_declarations_are_refused_before_any_body_arrives() {
    let too_large = Err(Violation::TooLarge {
        max_size: SMALL.max_size,
    });
    assert_eq!(scan_all(b"$2000000000\r\n"), too_large);
    assert_eq!(scan_all(b"$9999999999999999999\r\n"), too_large);
    assert_eq!(scan_all(b"*2000000000\r\n"), too_large);
    assert_eq!(scan_all(b"*2\r\n$65530\r\n"), too_large);
    // Exactly at the bound is fine.
    let body = SMALL.max_size - b"$65529\r\n\r\n".len();
    let mut exact = format!("${body}\r\n").into_bytes();
    exact.extend(vec![b'x'; body]);
    exact.extend_from_slice(b"\r\n");
    assert_eq!(exact.len(), SMALL.max_size);
    assert_eq!(scan_all(&exact), Ok(Scan::Complete(exact.len())));
    // A status line that never ends is refused once it passes the bound.
    let endless = vec![b'+'; SMALL.max_size + 3];
    assert_eq!(scan_all(&endless), too_large);
    assert_eq!(scan_all(&endless[..SMALL.max_size]), Ok(Scan::Incomplete));
}

#[test]
fn bad_lengths_and_types_are_malformed() {
    for bad in [
        &b"$-2\r\n"[..],
        b"*-5\r\n",
        b"$abc\r\n",
        b"$\r\n",
        b"$+3\r\nabc\r\n",
        b"$ 3\r\nabc\r\n",
        b":12a\r\n",
        b":\r\n",
        b":99999999999999999999\r\n",
        b"$111111111111111111111111\r\n",
        b"$3\r\nabcde\r\n",
        b"+OK\n",
        b"+O\rK\r\n",
        b">3\r\n$7\r\nmessage\r\n",
        b"%1\r\n",
        b"_\r\n",
        b"hello\r\n",
        b"\r\n",
    ] {
        assert!(
            matches!(scan_all(bad), Err(Violation::Malformed(_))),
            "{:?} gave {:?}",
            String::from_utf8_lossy(bad),
            scan_all(bad)
        );
    }
}

#[test]
fn integers_cover_i64() {
    assert_eq!(parse_int(b"-9223372036854775808"), Some(i64::MIN));
    assert_eq!(parse_int(b"9223372036854775807"), Some(i64::MAX));
    assert_eq!(parse_int(b"9223372036854775808"), None);
    assert_eq!(parse_int(b"-"), None);
}

#[test]
fn server_errors_are_cut_short() {
    let mut buf = BytesMut::from(&format!("-ERR {}\r\n", "x".repeat(10_000))[..]);
    match Framer::new(SMALL).next_reply(&mut buf).unwrap().unwrap() {
        Err(NodeError::Server(msg)) => assert_eq!(msg.len(), MAX_ERROR_TEXT),
        other => panic!("{other:?}"),
    }
}

/// Checks one input: no panic; a complete frame is within the bound and decodes (with `redis-protocol`
/// too, whose recursion is now bounded); an incomplete one is within the bound.
fn check(input: &[u8], limits: &Limits) {
    match scan(input, limits) {
        Ok(Scan::Complete(len)) => {
            assert!(len <= limits.max_size && len <= input.len());
            let mut buf = BytesMut::from(input);
            let frame = Framer::new(*limits).next_frame(&mut buf).unwrap().unwrap();
            let mut copy = frame.clone();
            let _ = to_reply(frame.freeze());
            let decoded = decode_bytes_mut(&mut copy);
            // An error is allowed (its error lines must be UTF-8; ours need not be); "incomplete" is not.
            assert!(
                !matches!(decoded, Ok(None)),
                "redis-protocol disagrees on {:?}: {decoded:?}",
                String::from_utf8_lossy(input)
            );
        }
        Ok(Scan::Incomplete) => assert!(input.len() <= limits.max_size),
        Err(_) => {}
    }
}

/// Pieces random inputs are made of: RESP headers, bodies, and noise.
const PIECES: &[&[u8]] = &[
    b"*1\r\n",
    b"*2\r\n",
    b"*3\r\n",
    b"*0\r\n",
    b"*-1\r\n",
    b"$3\r\nabc\r\n",
    b"$-1\r\n",
    b"$0\r\n\r\n",
    b"+OK\r\n",
    b"-ERR x\r\n",
    b":1\r\n",
    b":-1\r\n",
    b"\r\n",
    b"\r",
    b"\n",
    b"$",
    b"*",
    b"-",
    b"9",
    b"$99999999\r\n",
    b"*99999999\r\n",
    b">2\r\n",
    b"%1\r\n",
    b"x",
];

#[test]
fn random_inputs_never_panic_recurse_or_pass_the_bound() {
    let mut rng = fastrand::Rng::with_seed(13);
    let limits = Limits { max_size: 512 };
    for _ in 0..200_000 {
        let mut input = Vec::new();
        match rng.u8(0..3) {
            // Raw random bytes.
            0 => input.extend((0..rng.usize(0..64)).map(|_| rng.u8(..))),
            // Random RESP pieces.
            1 => {
                for _ in 0..rng.usize(0..40) {
                    input.extend_from_slice(PIECES[rng.usize(..PIECES.len())]);
                }
            }
            // A real reply, mutated: bytes flipped, inserted, deleted, or cut.
            _ => {
                let replies = real_replies();
                input = replies[rng.usize(..replies.len())].clone();
                input.truncate(600);
                for _ in 0..rng.usize(1..4) {
                    let at = rng.usize(..=input.len());
                    match rng.u8(0..4) {
                        0 if at < input.len() => input[at] = rng.u8(..),
                        1 => input.insert(at, rng.u8(..)),
                        2 if at < input.len() => {
                            input.remove(at);
                        }
                        _ => input.truncate(at),
                    }
                }
            }
        }
        check(&input, &limits);
        // The same input in two reads through one framer: the resumed scan must agree.
        let cut = rng.usize(..=input.len());
        let mut framer = Framer::new(limits);
        let first = framer.scan(&input[..cut]);
        let resumed = match first {
            Ok(Scan::Incomplete) => framer.scan(&input),
            done => done,
        };
        let fresh = scan(&input, &limits);
        match (&resumed, &fresh) {
            // A complete (or broken) prefix decides before the rest arrives.
            (Ok(Scan::Complete(n)), _) if *n <= cut => {}
            (Err(_), _) if cut < input.len() && scan(&input[..cut], &limits).is_err() => {}
            _ => assert_eq!(
                resumed,
                fresh,
                "{:?} cut at {cut}",
                String::from_utf8_lossy(&input)
            ),
        }
    }
}

#[test]
fn random_nesting_far_past_the_bound_is_refused_quickly() {
    let mut rng = fastrand::Rng::with_seed(7);
    for _ in 0..50 {
        let levels = rng.usize(MAX_DEPTH + 1..200_000);
        let input = b"*1\r\n".repeat(levels);
        assert_eq!(scan(&input, &Limits::default()), Err(Violation::TooDeep));
    }
}

#[test]
fn a_resumed_scan_agrees_with_a_fresh_one_at_every_split() {
    let mut rng = fastrand::Rng::with_seed(99);
    for reply in real_replies() {
        for _ in 0..20 {
            // Feed the reply in random pieces through one framer.
            let mut framer = Framer::new(SMALL);
            let mut buf = BytesMut::new();
            let mut at = 0;
            let mut got = None;
            while at < reply.len() {
                let step = rng.usize(1..=reply.len() - at);
                buf.extend_from_slice(&reply[at..at + step]);
                at += step;
                if let Some(frame) = framer.next_frame(&mut buf).unwrap() {
                    got = Some(frame);
                }
                assert_eq!(got.is_some(), at == reply.len(), "{reply:?} at {at}");
            }
            assert_eq!(&got.unwrap()[..], &reply[..]);
        }
    }
}

#[test]
fn a_trickled_long_line_is_refused_at_the_bound() {
    let mut framer = Framer::new(SMALL);
    let mut buf = BytesMut::from(&b"+"[..]);
    let chunk = [b'x'; 1000];
    let mut result = Ok(None);
    while buf.len() <= SMALL.max_size + chunk.len() {
        buf.extend_from_slice(&chunk);
        result = framer.next_frame(&mut buf);
        if result.is_err() {
            break;
        }
    }
    assert!(matches!(result, Err(Violation::TooLarge { .. })));
    assert!(buf.len() <= SMALL.max_size + chunk.len());
}

#[test]
fn reads_config_get_replies() {
    let pair = b"*2\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n";
    assert_eq!(config_value(pair).unwrap().as_deref(), Some("yes"));
    assert_eq!(config_value(b"*0\r\n").unwrap(), None, "no such parameter");
    assert_eq!(config_value(b"*2\r\n$1\r\na\r\n").unwrap(), None, "short");
    let refused =
        config_value(b"-NOPERM this user has no permissions to run the 'config|get' command\r\n");
    assert!(
        matches!(refused, Err(crate::error::NodeError::Server(_))),
        "{refused:?}"
    );
}
