//! RESP2 framing for the pipelined transport, on the `redis-protocol` codec.
//!
//! Commands are encoded straight into the connection's shared output buffer from borrowed frames built on
//! the stack, so queuing a command allocates nothing beyond buffer growth.

use bytes::BytesMut;
use redis_protocol::resp2::encode::extend_encode_borrowed;
use redis_protocol::resp2::types::{BorrowedFrame, BytesFrame};

use super::{Cmd, NodeResult, Reply, MAX_SCRIPT_KEYS};
use crate::error::NodeError;

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
            let (verb, body): (&[u8], &[u8]) = if eval_source {
                (b"EVAL", script.source.as_bytes())
            } else {
                (b"EVALSHA", script.sha1.as_bytes())
            };
            let keys = keys.as_slice();
            let mut digits = [[0u8; 20]; 3];
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
        Cmd::ScriptLoad(script) => {
            encode_args(out, &[b"SCRIPT", b"LOAD", script.source.as_bytes()])
        }
        Cmd::InfoServer => encode_args(out, &[b"INFO", b"server"]),
    }
}

/// Most arguments of one command: `EVALSHA sha numkeys`, the keys, the value and 3 numbers.
const MAX_ARGS: usize = 3 + MAX_SCRIPT_KEYS + 1 + 3;

/// Appends one command given as its arguments (at most [`MAX_ARGS`]).
pub(super) fn encode_args(out: &mut BytesMut, args: &[&[u8]]) {
    const EMPTY: BorrowedFrame<'static> = BorrowedFrame::Null;
    debug_assert!(args.len() <= MAX_ARGS);
    let mut frames = [EMPTY; MAX_ARGS];
    for (frame, arg) in frames.iter_mut().zip(args) {
        *frame = BorrowedFrame::BulkString(arg);
    }
    let array = BorrowedFrame::Array(&frames[..args.len()]);
    // Encoding a well-formed borrowed frame into a growable buffer cannot fail.
    let _ = extend_encode_borrowed(out, &array, false);
}

/// Turns a decoded frame into the reply the algorithm sees; server errors become [`NodeError::Server`].
pub(super) fn to_result(frame: BytesFrame) -> NodeResult {
    match frame {
        BytesFrame::SimpleString(s) if &s[..] == b"OK" => Ok(Reply::Ok),
        BytesFrame::SimpleString(s) | BytesFrame::BulkString(s) => Ok(Reply::Data(s)),
        BytesFrame::Integer(i) => Ok(Reply::Int(i)),
        BytesFrame::Null => Ok(Reply::Nil),
        BytesFrame::Error(e) => Err(NodeError::Server(e.to_string())),
        BytesFrame::Array(_) => Ok(Reply::Other),
    }
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
    use crate::scripts::RELEASE;
    use crate::transport::{Args, Keys};
    use crate::value::LockValue;
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
        let mut expected = b"*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$20\r\n".to_vec();
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
            text.contains("\r\n$1\r\n2\r\n$1\r\na\r\n$2\r\nbb\r\n$20\r\n"),
            "{text}"
        );
        assert!(text.ends_with("\r\n$1\r\n7\r\n$4\r\n1234\r\n"), "{text}");
    }

    #[test]
    fn decimal_covers_edges() {
        let mut b = [0u8; 20];
        assert_eq!(decimal(0, &mut b), b"0");
        assert_eq!(decimal(u64::MAX, &mut b), u64::MAX.to_string().as_bytes());
    }

    #[test]
    fn maps_replies() {
        assert_eq!(
            to_result(BytesFrame::SimpleString("OK".into())),
            Ok(Reply::Ok)
        );
        assert_eq!(to_result(BytesFrame::Null), Ok(Reply::Nil));
        assert_eq!(to_result(BytesFrame::Integer(-1)), Ok(Reply::Int(-1)));
        let err = to_result(BytesFrame::Error("NOSCRIPT No matching script".into())).unwrap_err();
        assert!(is_noscript(&err));
    }
}
