//! RESP2 commands for the engine's own connections, written here by hand (replies are framed by
//! `bounded`).
//!
//! A command is always an array of bulk strings, so its encoding is a few `memcpy`s around decimal
//! lengths. `redis-protocol`'s general encoder sized every length with `f64::log10` and was the top
//! item of loadgen's profile; the tests check this writer against it byte for byte. Nothing is
//! allocated beyond buffer growth.

use bytes::{BufMut, BytesMut};

use crate::error::NodeError;
use crate::protocol::cmd::{Cmd, Script, MAX_NUMS, MAX_SCRIPT_KEYS};
use crate::protocol::native::Native;

/// Appends the commands of a native form (`crate::protocol::native`) to `out`, back to back.
pub(crate) fn encode_native(out: &mut BytesMut, native: &Native) {
    native.commands(|args| encode_args(out, args));
}

/// Appends `cmd` to `out`. `eval_source` sends a script with `EVAL <source>` instead of `EVALSHA <sha>`.
pub(super) fn encode_cmd(out: &mut BytesMut, cmd: &Cmd, eval_source: bool) {
    let mut num = [0u8; 20];
    match cmd {
        Cmd::SetNxPx { key, value, ttl_ms } => {
            let ttl = decimal(*ttl_ms, &mut num);
            encode_args(out, &[b"SET", key, value.as_bytes(), b"NX", b"PX", ttl]);
        }
        Cmd::Script {
            script,
            keys,
            value,
            args,
        } => {
            let (verb, body) = script_verb(script, eval_source);
            let keys = keys.as_slice();
            let mut digits = [[0u8; 20]; MAX_NUMS];
            let mut parts: [&[u8]; MAX_ARGS] = [b""; MAX_ARGS];
            let numkeys = decimal(keys.len() as u64, &mut num);
            parts[..3].copy_from_slice(&[verb, body, numkeys]);
            let mut n = 3;
            for key in keys.iter().take(MAX_SCRIPT_KEYS) {
                parts[n] = key;
                n += 1;
            }
            parts[n] = value.as_bytes();
            n += 1;
            for (arg, buf) in args.as_slice().iter().zip(digits.iter_mut()) {
                parts[n] = decimal(*arg, buf);
                n += 1;
            }
            encode_args(out, &parts[..n]);
        }
        Cmd::ExtendMany { script, locks } => {
            let (verb, body) = script_verb(script, eval_source);
            // Streamed: a batch has no fixed bound on its arguments.
            let size = 64 + body.len() + locks.iter().map(|l| l.key.len() + 80).sum::<usize>();
            out.reserve(size);
            put_header(out, 3 + 3 * locks.len());
            put_bulk(out, verb);
            put_bulk(out, body);
            put_bulk(out, decimal(locks.len() as u64, &mut num));
            for lock in locks.iter() {
                put_bulk(out, &lock.key);
            }
            for lock in locks.iter() {
                put_bulk(out, lock.value.as_bytes());
                put_bulk(out, decimal(lock.ttl_ms, &mut num));
            }
        }
        Cmd::ReleaseMany {
            script,
            locks,
            keys_in_argv,
        } => {
            let (verb, body) = script_verb(script, eval_source);
            let size = 64 + body.len() + locks.iter().map(|(k, _)| k.len() + 64).sum::<usize>();
            out.reserve(size);
            put_header(out, 3 + 2 * locks.len());
            put_bulk(out, verb);
            put_bulk(out, body);
            let declared = if *keys_in_argv { 0 } else { locks.len() };
            put_bulk(out, decimal(declared as u64, &mut num));
            for (key, _) in locks.iter() {
                put_bulk(out, key);
            }
            for (_, value) in locks.iter() {
                put_bulk(out, value.as_bytes());
            }
        }
        Cmd::ScriptBytes { script, keys, args } => {
            let (verb, body) = script_verb(script, eval_source);
            let keys = keys.as_slice();
            let size = 64
                + body.len()
                + keys
                    .iter()
                    .chain(args.iter())
                    .map(|a| a.len() + 24)
                    .sum::<usize>();
            out.reserve(size);
            put_header(out, 3 + keys.len() + args.len());
            put_bulk(out, verb);
            put_bulk(out, body);
            put_bulk(out, decimal(keys.len() as u64, &mut num));
            for part in keys.iter().chain(args.iter()) {
                put_bulk(out, part);
            }
        }
        Cmd::ScriptLoad(script) => {
            encode_args(out, &[b"SCRIPT", b"LOAD", script.source.as_bytes()])
        }
        Cmd::InfoServer => encode_args(out, &[b"INFO", b"server"]),
    }
}

/// How a script is called: `EVAL <source>` (`eval_source`) or `EVALSHA <sha>`.
fn script_verb(script: &Script, eval_source: bool) -> (&'static [u8], &'static [u8]) {
    if eval_source {
        (b"EVAL", script.source.as_bytes())
    } else {
        (b"EVALSHA", script.sha1.as_bytes())
    }
}

/// Most arguments of one command: `EVALSHA sha numkeys`, the keys, the value and its numbers.
const MAX_ARGS: usize = 3 + MAX_SCRIPT_KEYS + 1 + MAX_NUMS;

/// Appends one command given as its arguments: `*N\r\n`, then `$len\r\narg\r\n` per argument.
pub(super) fn encode_args(out: &mut BytesMut, args: &[&[u8]]) {
    // Each argument costs its bytes plus `$`, up to 20 digits and two CRLFs.
    let size = 1 + 20 + 2 + args.iter().map(|a| a.len() + 1 + 20 + 4).sum::<usize>();
    out.reserve(size);
    put_header(out, args.len());
    for arg in args {
        put_bulk(out, arg);
    }
}

/// `*count\r\n`: the header of a command of `count` arguments.
fn put_header(out: &mut BytesMut, count: usize) {
    let mut num = [0u8; 20];
    out.put_u8(b'*');
    out.put_slice(decimal(count as u64, &mut num));
    out.put_slice(b"\r\n");
}

/// `$len\r\narg\r\n`: one argument.
fn put_bulk(out: &mut BytesMut, arg: &[u8]) {
    let mut num = [0u8; 20];
    out.put_u8(b'$');
    out.put_slice(decimal(arg.len() as u64, &mut num));
    out.put_slice(b"\r\n");
    out.put_slice(arg);
    out.put_slice(b"\r\n");
}

/// Whether a server error says the script cache lacks the script (after `SCRIPT FLUSH` or a restart).
pub(super) fn is_noscript(err: &NodeError) -> bool {
    matches!(err, NodeError::Server(msg) if msg.starts_with("NOSCRIPT"))
}

/// Writes `n` in decimal into `buf` and returns the digits.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::value::LockValue;
    use crate::protocol::cmd::{Args, Keys};
    use crate::protocol::scripts::{EXTEND_MANY, RELEASE};
    use bytes::Bytes;

    #[test]
    fn encodes_set_nx_px_as_resp_array() {
        let value = LockValue::random().unwrap();
        let mut out = BytesMut::new();
        encode_cmd(
            &mut out,
            &Cmd::SetNxPx {
                key: Bytes::from_static(b"k"),
                value,
                ttl_ms: 30000,
            },
            false,
        );
        let mut expected = b"*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$25\r\n".to_vec();
        expected.extend_from_slice(value.as_bytes());
        expected.extend_from_slice(b"\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n30000\r\n");
        assert_eq!(&out[..], &expected[..]);
    }

    #[test]
    fn encodes_scripts_by_sha_or_source() {
        let value = LockValue::random().unwrap();
        let cmd = Cmd::Script {
            script: &RELEASE,
            keys: Keys::One(Bytes::from_static(b"\0bin")),
            value,
            args: Args::NONE,
        };
        let mut sha = BytesMut::new();
        encode_cmd(&mut sha, &cmd, false);
        assert!(sha.starts_with(b"*5\r\n$7\r\nEVALSHA\r\n$40\r\n"));
        let mut src = BytesMut::new();
        encode_cmd(&mut src, &cmd, true);
        assert!(src.starts_with(b"*5\r\n$4\r\nEVAL\r\n"));
    }

    #[test]
    fn encodes_an_eval_with_byte_arguments_like_any_command() {
        let cmd = Cmd::ScriptBytes {
            script: &RELEASE,
            keys: Keys::Many(vec![Bytes::from_static(b"k"), Bytes::from_static(b"k:h")].into()),
            args: vec![Bytes::from_static(b"\0\r\n|x"), Bytes::new()].into(),
        };
        for eval_source in [false, true] {
            let mut out = BytesMut::new();
            encode_cmd(&mut out, &cmd, eval_source);
            let body = if eval_source {
                RELEASE.source
            } else {
                RELEASE.sha1
            };
            let verb: &[u8] = if eval_source { b"EVAL" } else { b"EVALSHA" };
            let mut expected = BytesMut::new();
            let args: [&[u8]; 7] = [verb, body.as_bytes(), b"2", b"k", b"k:h", b"\0\r\n|x", b""];
            encode_args(&mut expected, &args);
            assert_eq!(out, expected);
        }
    }

    #[test]
    fn encodes_several_keys_and_numbers() {
        let value = LockValue::random().unwrap();
        let keys: std::sync::Arc<[Bytes]> =
            vec![Bytes::from_static(b"a"), Bytes::from_static(b"bb")].into();
        let cmd = Cmd::Script {
            script: &RELEASE,
            keys: Keys::Many(keys),
            value,
            args: Args::of(&[7, 1234]),
        };
        let mut out = BytesMut::new();
        encode_cmd(&mut out, &cmd, false);
        let text = String::from_utf8_lossy(&out).into_owned();
        assert!(text.starts_with("*8\r\n$7\r\nEVALSHA\r\n$40\r\n"), "{text}");
        assert!(
            text.contains("\r\n$1\r\n2\r\n$1\r\na\r\n$2\r\nbb\r\n$25\r\n"),
            "{text}"
        );
        assert!(text.ends_with("\r\n$1\r\n7\r\n$4\r\n1234\r\n"), "{text}");
    }

    #[test]
    fn matches_the_redis_protocol_encoder_byte_for_byte() {
        use redis_protocol::resp2::encode::extend_encode_borrowed;
        use redis_protocol::resp2::types::BorrowedFrame;
        let long = vec![b'x'; 100_000];
        let many: [&[u8]; MAX_ARGS] = [b"a"; MAX_ARGS];
        let cases: [&[&[u8]]; 5] = [
            &[],
            &[b""],
            &[b"SET", b"k", b"\0\r\n\xff", b"NX", b"PX", b"30000"],
            &[b"EVALSHA", &[b'a'; 40], b"1", b"key", &long],
            &many,
        ];
        for args in cases {
            let mut ours = BytesMut::new();
            encode_args(&mut ours, args);
            let frames: Vec<BorrowedFrame<'_>> =
                args.iter().map(|a| BorrowedFrame::BulkString(a)).collect();
            let mut theirs = BytesMut::new();
            extend_encode_borrowed(&mut theirs, &BorrowedFrame::Array(&frames), false).unwrap();
            assert_eq!(ours, theirs, "{} args", args.len());
        }
    }

    #[test]
    fn encodes_a_coalesced_extend_as_keys_then_value_ttl_pairs() {
        use crate::protocol::cmd::Extend;
        let a = LockValue::random().unwrap();
        let b = LockValue::random().unwrap();
        let locks: std::sync::Arc<[Extend]> = vec![
            Extend {
                key: Bytes::from_static(b"k1"),
                value: a,
                ttl_ms: 30000,
            },
            Extend {
                key: Bytes::from_static(b"k2"),
                value: b,
                ttl_ms: 7,
            },
        ]
        .into();
        let mut ours = BytesMut::new();
        encode_cmd(
            &mut ours,
            &Cmd::ExtendMany {
                script: &EXTEND_MANY,
                locks,
            },
            false,
        );
        let sha = EXTEND_MANY.sha1.as_bytes();
        let args: [&[u8]; 9] = [
            b"EVALSHA",
            sha,
            b"2",
            b"k1",
            b"k2",
            a.as_bytes(),
            b"30000",
            b.as_bytes(),
            b"7",
        ];
        let mut expected = BytesMut::new();
        encode_args(&mut expected, &args);
        assert_eq!(ours, expected);
    }

    #[test]
    fn encodes_a_coalesced_release_as_keys_then_values() {
        let a = LockValue::random().unwrap();
        let b = LockValue::random().unwrap();
        let script = &RELEASE;
        let locks = vec![
            (Bytes::from_static(b"k1"), a),
            (Bytes::from_static(b"k2"), b),
        ];
        // Declared keys (a standalone node) and keys in ARGV (a cluster shard): only numkeys differs.
        for (eval_source, keys_in_argv) in [(false, false), (true, false), (false, true)] {
            let mut ours = BytesMut::new();
            let cmd = Cmd::ReleaseMany {
                script,
                locks: locks.clone().into(),
                keys_in_argv,
            };
            encode_cmd(&mut ours, &cmd, eval_source);
            let (verb, body): (&[u8], &[u8]) = if eval_source {
                (b"EVAL", script.source.as_bytes())
            } else {
                (b"EVALSHA", script.sha1.as_bytes())
            };
            let declared: &[u8] = if keys_in_argv { b"0" } else { b"2" };
            let args: [&[u8]; 7] = [
                verb,
                body,
                declared,
                b"k1",
                b"k2",
                a.as_bytes(),
                b.as_bytes(),
            ];
            let mut expected = BytesMut::new();
            encode_args(&mut expected, &args);
            assert_eq!(ours, expected);
        }
    }

    #[test]
    fn decimal_covers_edges() {
        let mut b = [0u8; 20];
        assert_eq!(decimal(0, &mut b), b"0");
        assert_eq!(decimal(u64::MAX, &mut b), u64::MAX.to_string().as_bytes());
    }

    #[test]
    fn recognises_noscript() {
        assert!(is_noscript(&NodeError::Server(
            "NOSCRIPT No matching script".into()
        )));
        assert!(!is_noscript(&NodeError::Server("ERR x".into())));
    }
}
