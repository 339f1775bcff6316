//! The string commands the engine's scripts use: `GET`, and `SET` with its options (`NX`, `XX`,
//! `GET`, `EX`, `PX`, `EXAT`, `PXAT`, `KEEPTTL`) as Redis 7.0 reads them.

use bytes::Bytes;

use super::db::Db;
use super::keyspace::{Data, Entry};
use super::reply::{not_integer, syntax_error, Reply};

/// `GET key`.
pub(crate) fn get(db: &mut Db, args: &[Bytes]) -> Reply {
    match db.keys.string(&args[1]) {
        Ok(Some(v)) => Reply::Bulk(v),
        Ok(None) => Reply::Nil,
        Err(e) => e,
    }
}

/// When a `SET` makes its key expire.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expiry {
    /// No option: the key loses any expiry it had.
    Never,
    /// `KEEPTTL`.
    Keep,
    /// `EX`, `PX`, `EXAT`, `PXAT`: at this node time (ms).
    At(i64),
}

/// `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`.
pub(crate) fn set(db: &mut Db, args: &[Bytes]) -> Reply {
    let (mut nx, mut xx, mut get) = (false, false, false);
    let mut expiry = Expiry::Never;
    let mut i = 3;
    while i < args.len() {
        let option = args[i].to_ascii_uppercase();
        let timed = matches!(option.as_slice(), b"EX" | b"PX" | b"EXAT" | b"PXAT");
        match option.as_slice() {
            b"NX" if !xx => nx = true,
            b"XX" if !nx => xx = true,
            b"GET" => get = true,
            b"KEEPTTL" if expiry == Expiry::Never => expiry = Expiry::Keep,
            _ if timed && expiry == Expiry::Never && i + 1 < args.len() => {
                i += 1;
                let Some(n) = std::str::from_utf8(&args[i])
                    .ok()
                    .and_then(|t| t.parse::<i64>().ok())
                else {
                    return not_integer();
                };
                let ms = match option.as_slice() {
                    b"EX" | b"EXAT" => n.checked_mul(1000),
                    _ => Some(n),
                };
                let at = match (ms, option.as_slice()) {
                    (Some(ms), _) if ms <= 0 || n <= 0 => None,
                    (Some(ms), b"EX" | b"PX") => ms.checked_add(db.keys.now),
                    (ms, _) => ms,
                };
                let Some(at) = at else {
                    return Reply::err("invalid expire time in 'set' command");
                };
                expiry = Expiry::At(at);
            }
            _ => return syntax_error(),
        }
        i += 1;
    }
    let key = &args[1];
    let old = match db.keys.get(key) {
        None => None,
        Some(Entry {
            data: Data::Str(v),
            expires_at,
        }) => Some((Some(v.clone()), *expires_at)),
        Some(Entry { expires_at, .. }) if !get => Some((None, *expires_at)),
        Some(_) => return super::reply::wrong_type(),
    };
    let answer = |old: &Option<(Option<Bytes>, Option<i64>)>| match (get, old) {
        (true, Some((Some(v), _))) => Reply::Bulk(v.clone()),
        (true, _) => Reply::Nil,
        (false, _) => Reply::ok(),
    };
    if (nx && old.is_some()) || (xx && old.is_none()) {
        return if get { answer(&old) } else { Reply::Nil };
    }
    let expires_at = match expiry {
        Expiry::Never => None,
        Expiry::Keep => old.as_ref().and_then(|(_, at)| *at),
        Expiry::At(at) => Some(at),
    };
    db.keys.set(
        key.clone(),
        Entry {
            data: Data::Str(args[2].clone()),
            expires_at,
        },
    );
    answer(&old)
}
