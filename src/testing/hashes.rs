//! The hash commands `FencedStore`'s scripts use: `HSET`, `HGET`, `HMGET`, and `HDEL`, `HGETALL` for
//! a test's own reads.

use bytes::Bytes;

use super::db::Db;
use super::keyspace::Data;
use super::reply::Reply;

/// `HSET key field value [field value ...]`: how many fields are new.
pub(crate) fn hset(db: &mut Db, args: &[Bytes]) -> Reply {
    if args.len() % 2 != 0 {
        return Reply::err("wrong number of arguments for 'hset' command");
    }
    let hash = match db
        .keys
        .collection(&args[1], || Data::Hash(Default::default()), Data::as_hash)
    {
        Ok(hash) => hash,
        Err(e) => return e,
    };
    let new = args[2..]
        .chunks(2)
        .filter(|pair| hash.insert(pair[0].clone(), pair[1].clone()).is_none())
        .count();
    Reply::Int(new as i64)
}

/// `HGET key field`.
pub(crate) fn hget(db: &mut Db, args: &[Bytes]) -> Reply {
    match db.keys.hash(&args[1]) {
        Err(e) => e,
        Ok(hash) => hash
            .and_then(|h| h.get(&args[2]).cloned())
            .map_or(Reply::Nil, Reply::Bulk),
    }
}

/// `HMGET key field...`: one value or nil per field.
pub(crate) fn hmget(db: &mut Db, args: &[Bytes]) -> Reply {
    match db.keys.hash(&args[1]) {
        Err(e) => e,
        Ok(hash) => Reply::Array(
            args[2..]
                .iter()
                .map(|f| {
                    hash.as_ref()
                        .and_then(|h| h.get(f).cloned())
                        .map_or(Reply::Nil, Reply::Bulk)
                })
                .collect(),
        ),
    }
}

/// `HDEL key field...`: how many were there.
pub(crate) fn hdel(db: &mut Db, args: &[Bytes]) -> Reply {
    let removed = match db.keys.hash(&args[1]) {
        Err(e) => return e,
        Ok(None) => 0,
        Ok(Some(hash)) => args[2..]
            .iter()
            .filter(|f| hash.remove(*f).is_some())
            .count(),
    };
    db.keys.drop_if_empty(&args[1]);
    Reply::Int(removed as i64)
}

/// `HGETALL key`: fields and values, flat.
pub(crate) fn hgetall(db: &mut Db, args: &[Bytes]) -> Reply {
    match db.keys.hash(&args[1]) {
        Err(e) => e,
        Ok(hash) => Reply::Array(
            hash.into_iter()
                .flat_map(|h| h.iter())
                .flat_map(|(f, v)| [Reply::Bulk(f.clone()), Reply::Bulk(v.clone())])
                .collect(),
        ),
    }
}
