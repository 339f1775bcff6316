//! The commands on keys of any type: `DEL`, `EXISTS`, `TYPE`, the expiry family (`PEXPIRE`,
//! `EXPIRE`, `PTTL`, `TTL`, `PERSIST`), `KEYS`, `DBSIZE`, `FLUSHALL`/`FLUSHDB`.

use bytes::Bytes;

use super::db::Db;
use super::reply::{not_integer, syntax_error, Reply};

/// `DEL key...`: how many were live.
pub(crate) fn del(db: &mut Db, args: &[Bytes]) -> Reply {
    Reply::Int(args[1..].iter().filter(|k| db.keys.remove(k)).count() as i64)
}

/// `EXISTS key...`: how many are live (a key named twice counts twice).
pub(crate) fn exists(db: &mut Db, args: &[Bytes]) -> Reply {
    Reply::Int(args[1..].iter().filter(|k| db.keys.exists(k)).count() as i64)
}

/// `TYPE key`: a status, `none` when missing.
pub(crate) fn type_of(db: &mut Db, args: &[Bytes]) -> Reply {
    let name = db.keys.get(&args[1]).map_or("none", |e| e.data.type_name());
    Reply::Status(Bytes::from_static(name.as_bytes()))
}

/// `PEXPIRE key ms [NX|XX|GT|LT]`.
pub(crate) fn pexpire(db: &mut Db, args: &[Bytes]) -> Reply {
    expire(db, args, 1, "pexpire")
}

/// `EXPIRE key s [NX|XX|GT|LT]`.
pub(crate) fn expire_s(db: &mut Db, args: &[Bytes]) -> Reply {
    expire(db, args, 1000, "expire")
}

/// The expire commands: 1 when the expiry was set (or the key deleted, for a time already past),
/// 0 when the key is missing or the condition refused it.
fn expire(db: &mut Db, args: &[Bytes], unit_ms: i64, name: &str) -> Reply {
    let Some(n) = int(&args[2]) else {
        return not_integer();
    };
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for option in &args[3..] {
        match option.to_ascii_uppercase().as_slice() {
            b"NX" => nx = true,
            b"XX" => xx = true,
            b"GT" => gt = true,
            b"LT" => lt = true,
            _ => {
                let shown = String::from_utf8_lossy(option);
                return Reply::err(format!("Unsupported option {shown}"));
            }
        }
    }
    if nx && (xx || gt || lt) {
        return Reply::err("NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return Reply::err("GT and LT options at the same time are not compatible");
    }
    let now = db.keys.now;
    let Some(at) = n.checked_mul(unit_ms).and_then(|ms| ms.checked_add(now)) else {
        return Reply::err(format!("invalid expire time in '{name}' command"));
    };
    let Some(entry) = db.keys.get(&args[1]) else {
        return Reply::Int(0);
    };
    let current = entry.expires_at;
    // No expiry counts as an infinite one for GT and LT.
    let refused = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|c| at <= c))
        || (lt && current.is_some_and(|c| at >= c));
    if refused {
        return Reply::Int(0);
    }
    if at <= now {
        db.keys.remove(&args[1]);
    } else {
        entry.expires_at = Some(at);
    }
    Reply::Int(1)
}

/// `PTTL key`: ms left, -1 without expiry, -2 when missing.
pub(crate) fn pttl(db: &mut Db, args: &[Bytes]) -> Reply {
    Reply::Int(ttl_ms(db, &args[1]))
}

/// `TTL key`: seconds left (rounded), -1 without expiry, -2 when missing.
pub(crate) fn ttl(db: &mut Db, args: &[Bytes]) -> Reply {
    match ttl_ms(db, &args[1]) {
        ms if ms < 0 => Reply::Int(ms),
        ms => Reply::Int((ms + 500) / 1000),
    }
}

fn ttl_ms(db: &mut Db, key: &[u8]) -> i64 {
    let now = db.keys.now;
    match db.keys.get(key) {
        None => -2,
        Some(e) => e.expires_at.map_or(-1, |at| (at - now).max(0)),
    }
}

/// `PERSIST key`: 1 when an expiry was removed.
pub(crate) fn persist(db: &mut Db, args: &[Bytes]) -> Reply {
    match db.keys.get(&args[1]) {
        Some(e) if e.expires_at.is_some() => {
            e.expires_at = None;
            Reply::Int(1)
        }
        _ => Reply::Int(0),
    }
}

/// `KEYS pattern`: the live keys matching a glob (`*`, `?`, `[a-z]`, `[^x]`, `\` escapes).
pub(crate) fn keys(db: &mut Db, args: &[Bytes]) -> Reply {
    let mut found: Vec<Bytes> = db
        .keys
        .live_keys()
        .into_iter()
        .filter(|k| glob(&args[1], k))
        .collect();
    found.sort();
    Reply::Array(found.into_iter().map(Reply::Bulk).collect())
}

/// `DBSIZE`: how many keys are live.
pub(crate) fn dbsize(db: &mut Db, _: &[Bytes]) -> Reply {
    Reply::Int(db.keys.live_keys().len() as i64)
}

/// `FLUSHALL` / `FLUSHDB` [`ASYNC`|`SYNC`]: every key gone.
pub(crate) fn flush(db: &mut Db, args: &[Bytes]) -> Reply {
    match args.get(1).map(|a| a.to_ascii_uppercase()) {
        None => {}
        Some(mode) if args.len() == 2 && (mode == b"ASYNC" || mode == b"SYNC") => {}
        Some(_) => return syntax_error(),
    }
    db.keys.clear();
    Reply::ok()
}

/// A signed decimal integer, as Redis parses one (no blanks, no `+`).
pub(crate) fn int(text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?;
    let digits = text.strip_prefix('-').unwrap_or(text);
    // No sign but `-`, no leading zero (`0` itself is fine, `-0` is not), as Redis's `string2ll`.
    if !digits.bytes().all(|b| b.is_ascii_digit()) || (digits.starts_with('0') && text.len() > 1) {
        return None;
    }
    text.parse().ok()
}

/// Redis's glob (`stringmatchlen`), case-sensitive.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|skip| glob(rest, &text[skip..])),
        Some((b'?', rest)) => !text.is_empty() && glob(rest, &text[1..]),
        Some((b'[', rest)) => {
            let Some((&c, after)) = text.split_first() else {
                return false;
            };
            let (negate, mut class) = match rest.split_first() {
                Some((b'^', r)) => (true, r),
                _ => (false, rest),
            };
            let mut hit = false;
            loop {
                match class {
                    [] => return false,
                    [b']', r @ ..] => {
                        class = r;
                        break;
                    }
                    [b'\\', x, r @ ..] => {
                        hit |= *x == c;
                        class = r;
                    }
                    [lo, b'-', hi, r @ ..] if *hi != b']' => {
                        let (lo, hi) = if lo <= hi { (*lo, *hi) } else { (*hi, *lo) };
                        hit |= (lo..=hi).contains(&c);
                        class = r;
                    }
                    [x, r @ ..] => {
                        hit |= *x == c;
                        class = r;
                    }
                }
            }
            hit != negate && glob(class, after)
        }
        Some((b'\\', [x, rest @ ..])) => text.first() == Some(x) && glob(rest, &text[1..]),
        Some((p, rest)) => text.first() == Some(p) && glob(rest, &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_redis_keys_does() {
        assert!(glob(b"*", b""));
        assert!(glob(b"redlock:{*}", b"redlock:{a}"));
        assert!(glob(b"h?llo", b"hallo") && !glob(b"h?llo", b"hllo"));
        assert!(glob(b"h[ae]llo", b"hello") && !glob(b"h[^e]llo", b"hello"));
        assert!(glob(b"h[a-b]llo", b"hbllo") && glob(b"a\\*", b"a*") && !glob(b"a\\*", b"ab"));
    }

    #[test]
    fn integers_parse_strictly() {
        assert_eq!(int(b"-12"), Some(-12));
        assert_eq!(int(b"0"), Some(0));
        for bad in [&b"+1"[..], b" 1", b"1.0", b"01", b"", b"-0"] {
            assert_eq!(int(bad), None, "{bad:?}");
        }
    }
}
