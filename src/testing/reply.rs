//! What a memory node answers: a RESP2 reply as a value, its encoding, and the number formats Redis
//! uses on the wire (`%.17g` for a score, and for a Lua number passed to `redis.call`).

use bytes::{BufMut, Bytes, BytesMut};

/// One RESP2 reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    /// `+<text>` (`+OK`, `TYPE`'s answer).
    Status(Bytes),
    /// `-<text>`: the first word is the error code (`ERR`, `WRONGTYPE`, `NOSCRIPT`).
    Error(String),
    /// `:<n>`.
    Int(i64),
    /// `$<len>` and the bytes.
    Bulk(Bytes),
    /// `$-1`: no value.
    Nil,
    /// `*<n>` and the elements.
    Array(Vec<Reply>),
}

impl Reply {
    /// `+OK`.
    pub(crate) fn ok() -> Self {
        Self::Status(Bytes::from_static(b"OK"))
    }

    /// `-ERR <text>`.
    pub(crate) fn err(text: impl std::fmt::Display) -> Self {
        Self::Error(format!("ERR {text}"))
    }

    /// A bulk string of `text`.
    pub(crate) fn bulk(text: impl Into<Bytes>) -> Self {
        Self::Bulk(text.into())
    }

    /// A score as Redis 7.0 sends it (`addReplyDouble`): a bulk string in `%.17g`.
    pub(crate) fn score(score: f64) -> Self {
        Self::Bulk(g17(score).into())
    }

    /// Appends this reply's RESP2 encoding to `out`.
    pub(crate) fn encode(&self, out: &mut BytesMut) {
        match self {
            Self::Status(text) => line(out, b'+', text),
            Self::Error(text) => {
                // A reply line cannot carry a line break: Redis maps them to spaces too.
                let text = text.replace(['\r', '\n'], " ");
                line(out, b'-', text.as_bytes())
            }
            Self::Int(n) => line(out, b':', n.to_string().as_bytes()),
            Self::Bulk(data) => {
                line(out, b'$', data.len().to_string().as_bytes());
                out.put_slice(data);
                out.put_slice(b"\r\n");
            }
            Self::Nil => out.put_slice(b"$-1\r\n"),
            Self::Array(items) => {
                line(out, b'*', items.len().to_string().as_bytes());
                for item in items {
                    item.encode(out);
                }
            }
        }
    }
}

/// The wrong-type error every command answers for a key of another type.
pub(crate) fn wrong_type() -> Reply {
    Reply::Error("WRONGTYPE Operation against a key holding the wrong kind of value".into())
}

/// The error for an argument that should be an integer.
pub(crate) fn not_integer() -> Reply {
    Reply::err("value is not an integer or out of range")
}

/// The error for a malformed command (option, argument count).
pub(crate) fn syntax_error() -> Reply {
    Reply::err("syntax error")
}

fn line(out: &mut BytesMut, kind: u8, text: &[u8]) {
    out.put_u8(kind);
    out.put_slice(text);
    out.put_slice(b"\r\n");
}

/// C's `printf("%.17g", v)`: how Redis 7.0 writes a score, and a Lua number it is given as a
/// command argument (so `now + ttl` reaches `ZADD` as the same digits on both).
pub(crate) fn g17(v: f64) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // The exponent `%g` decides by is the one of the value rounded to 17 significant digits.
    let sci = format!("{v:.16e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e}'s exponent is a number");
    if !(-4..17).contains(&exp) {
        let mantissa = trim_fraction(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let fixed = format!("{v:.*}", (16 - exp) as usize);
    trim_fraction(&fixed).to_string()
}

/// `%g` drops a fraction's trailing zeros, and the point when nothing is left after it.
fn trim_fraction(number: &str) -> &str {
    if !number.contains('.') {
        return number;
    }
    number.trim_end_matches('0').trim_end_matches('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g17_writes_as_printf_does() {
        for (v, text) in [
            (0.0, "0"),
            (1.0, "1"),
            (-3.0, "-3"),
            (1_700_000_000_123.0, "1700000000123"),
            (9_007_199_254_740_993.0, "9007199254740992"),
            (1e17, "1e+17"),
            (0.5, "0.5"),
            (0.1, "0.10000000000000001"),
            (1e-5, "1.0000000000000001e-05"),
            (123.25, "123.25"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(g17(v), text, "{v}");
        }
    }

    #[test]
    fn replies_encode_as_resp2() {
        let mut out = BytesMut::new();
        Reply::Array(vec![
            Reply::ok(),
            Reply::Int(-2),
            Reply::bulk("ab"),
            Reply::Nil,
            Reply::Error("ERR a\r\nb".into()),
        ])
        .encode(&mut out);
        assert_eq!(
            &out[..],
            b"*5\r\n+OK\r\n:-2\r\n$2\r\nab\r\n$-1\r\n-ERR a  b\r\n"
        );
    }
}
