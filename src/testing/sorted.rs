//! The sorted-set commands the scripts use, as Redis 7.0 answers them over RESP2: `ZADD` (`NX`,
//! `XX`, `GT`, `LT`, `CH`, `INCR`), `ZREM`, `ZSCORE`, `ZCARD`, `ZCOUNT`, `ZRANGE` (by rank or
//! `BYSCORE`, `REV`, `LIMIT`, `WITHSCORES`), `ZREVRANGE`, `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`,
//! `ZREMRANGEBYSCORE`, `ZPOPMIN`, `ZPOPMAX`.

use bytes::Bytes;

use super::db::Db;
use super::generic::int;
use super::keyspace::Data;
use super::reply::{not_integer, syntax_error, Reply};
use super::zset::{parse_score, AddRule, Added, Bound, SortedSet};

fn not_float() -> Reply {
    Reply::err("value is not a valid float")
}

fn bad_range() -> Reply {
    Reply::err("min or max is not a float")
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`.
pub(crate) fn zadd(db: &mut Db, args: &[Bytes]) -> Reply {
    let mut rule = AddRule::default();
    let (mut ch, mut incr) = (false, false);
    let mut i = 2;
    while let Some(option) = args.get(i) {
        match option.to_ascii_uppercase().as_slice() {
            b"NX" => rule.nx = true,
            b"XX" => rule.xx = true,
            b"GT" => rule.gt = true,
            b"LT" => rule.lt = true,
            b"CH" => ch = true,
            b"INCR" => incr = true,
            _ => break,
        }
        i += 1;
    }
    let pairs = &args[i..];
    if pairs.is_empty() || pairs.len() % 2 != 0 {
        return syntax_error();
    }
    if rule.nx && rule.xx {
        return Reply::err("XX and NX options at the same time are not compatible");
    }
    if (rule.nx && (rule.gt || rule.lt)) || (rule.gt && rule.lt) {
        return Reply::err("GT, LT, and/or NX options at the same time are not compatible");
    }
    if incr && pairs.len() > 2 {
        return Reply::err("INCR option supports a single increment-element pair");
    }
    let mut scored = Vec::with_capacity(pairs.len() / 2);
    for pair in pairs.chunks(2) {
        let Some(score) = parse_score(&pair[0]) else {
            return not_float();
        };
        scored.push((score, pair[1].clone()));
    }
    let key = &args[1];
    // `XX` never makes the key (nor does it answer WRONGTYPE any later than Redis: checked first).
    let set = match db.keys.zset(&args[1]) {
        Err(e) => return e,
        Ok(None) if rule.xx => return if incr { Reply::Nil } else { Reply::Int(0) },
        Ok(_) => db
            .keys
            .collection(key, || Data::ZSet(SortedSet::default()), Data::as_zset)
            .expect("checked to be a sorted set"),
    };
    let mut counted = 0;
    let mut last = None;
    for (score, member) in scored {
        let score = match (incr, set.score(&member)) {
            (true, Some(old)) => old + score,
            _ => score,
        };
        if score.is_nan() {
            return Reply::err("resulting score is not a number (NaN)");
        }
        match set.add(member, score, rule) {
            Added::New => {
                counted += 1;
                last = Some(score);
            }
            Added::Updated => {
                counted += i64::from(ch);
                last = Some(score);
            }
            Added::Unchanged => last = Some(score),
            Added::Refused => last = None,
        }
    }
    db.keys.drop_if_empty(key);
    match (incr, last) {
        (true, Some(score)) => Reply::score(score),
        (true, None) => Reply::Nil,
        (false, _) => Reply::Int(counted),
    }
}

/// `ZREM key member...`: how many were there.
pub(crate) fn zrem(db: &mut Db, args: &[Bytes]) -> Reply {
    let removed = match db.keys.zset(&args[1]) {
        Err(e) => return e,
        Ok(None) => 0,
        Ok(Some(set)) => args[2..].iter().filter(|m| set.remove(m)).count(),
    };
    db.keys.drop_if_empty(&args[1]);
    Reply::Int(removed as i64)
}

/// `ZSCORE key member`.
pub(crate) fn zscore(db: &mut Db, args: &[Bytes]) -> Reply {
    match db.keys.zset(&args[1]) {
        Err(e) => e,
        Ok(set) => set
            .and_then(|s| s.score(&args[2]))
            .map_or(Reply::Nil, Reply::score),
    }
}

/// `ZCARD key`.
pub(crate) fn zcard(db: &mut Db, args: &[Bytes]) -> Reply {
    match db.keys.zset(&args[1]) {
        Err(e) => e,
        Ok(set) => Reply::Int(set.map_or(0, |s| s.len() as i64)),
    }
}

/// `ZCOUNT key min max`.
pub(crate) fn zcount(db: &mut Db, args: &[Bytes]) -> Reply {
    let (Some(min), Some(max)) = (Bound::parse(&args[2]), Bound::parse(&args[3])) else {
        return bad_range();
    };
    match db.keys.zset(&args[1]) {
        Err(e) => e,
        Ok(set) => Reply::Int(set.map_or(0, |s| s.by_score(min, max, false).len() as i64)),
    }
}

/// `ZREMRANGEBYSCORE key min max`: how many it removed.
pub(crate) fn zremrangebyscore(db: &mut Db, args: &[Bytes]) -> Reply {
    let (Some(min), Some(max)) = (Bound::parse(&args[2]), Bound::parse(&args[3])) else {
        return bad_range();
    };
    let removed = match db.keys.zset(&args[1]) {
        Err(e) => return e,
        Ok(None) => 0,
        Ok(Some(set)) => {
            let gone = set.by_score(min, max, false);
            for (member, _) in &gone {
                set.remove(member);
            }
            gone.len()
        }
    };
    db.keys.drop_if_empty(&args[1]);
    Reply::Int(removed as i64)
}

/// `ZPOPMIN key [count]`.
pub(crate) fn zpopmin(db: &mut Db, args: &[Bytes]) -> Reply {
    pop(db, args, false)
}

/// `ZPOPMAX key [count]`.
pub(crate) fn zpopmax(db: &mut Db, args: &[Bytes]) -> Reply {
    pop(db, args, true)
}

fn pop(db: &mut Db, args: &[Bytes], max: bool) -> Reply {
    let count = match args.get(2).map(|c| int(c)) {
        None => 1,
        Some(None) => return not_integer(),
        Some(Some(n)) if n < 0 => return Reply::err("value is out of range, must be positive"),
        Some(Some(n)) => n as usize,
    };
    if args.len() > 3 {
        return syntax_error();
    }
    let popped = match db.keys.zset(&args[1]) {
        Err(e) => return e,
        Ok(None) => Vec::new(),
        Ok(Some(set)) if max => {
            let top = set.by_rank(0, count as i64 - 1, true);
            for (member, _) in &top {
                set.remove(member);
            }
            top
        }
        Ok(Some(set)) => set.pop_min(count),
    };
    db.keys.drop_if_empty(&args[1]);
    flatten(popped, true)
}

/// `ZRANGE key start stop [BYSCORE] [REV] [LIMIT offset count] [WITHSCORES]`.
pub(crate) fn zrange(db: &mut Db, args: &[Bytes]) -> Reply {
    let o = match RangeOptions::parse(args, true) {
        Ok(o) => o,
        Err(e) => return e,
    };
    if o.limit.is_some() && !o.by_score {
        return Reply::err(
            "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if o.by_score {
        return range_by_score(db, args, o.rev, o.limit, o.scores);
    }
    range_by_rank(db, args, o.rev, o.scores)
}

/// `ZREVRANGE key start stop [WITHSCORES]`.
pub(crate) fn zrevrange(db: &mut Db, args: &[Bytes]) -> Reply {
    let scores = match args.get(4) {
        None => false,
        Some(o) if args.len() == 5 && o.eq_ignore_ascii_case(b"WITHSCORES") => true,
        Some(_) => return syntax_error(),
    };
    range_by_rank(db, args, true, scores)
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`.
pub(crate) fn zrangebyscore(db: &mut Db, args: &[Bytes]) -> Reply {
    by_score_command(db, args, false)
}

/// `ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]`.
pub(crate) fn zrevrangebyscore(db: &mut Db, args: &[Bytes]) -> Reply {
    by_score_command(db, args, true)
}

fn by_score_command(db: &mut Db, args: &[Bytes], rev: bool) -> Reply {
    match RangeOptions::parse(args, false) {
        Ok(o) => range_by_score(db, args, rev, o.limit, o.scores),
        Err(e) => e,
    }
}

/// The options after a range's key and bounds (from `args[4]`).
#[derive(Default)]
struct RangeOptions {
    by_score: bool,
    rev: bool,
    scores: bool,
    limit: Option<(i64, i64)>,
}

impl RangeOptions {
    /// `ZRANGE`'s (`zrange`), or the older by-score commands' (WITHSCORES and LIMIT only: the
    /// others are a syntax error there, as on Redis).
    fn parse(args: &[Bytes], zrange: bool) -> Result<Self, Reply> {
        let mut o = Self::default();
        let mut i = 4;
        while let Some(option) = args.get(i) {
            match option.to_ascii_uppercase().as_slice() {
                b"BYSCORE" if zrange => o.by_score = true,
                b"REV" if zrange => o.rev = true,
                b"WITHSCORES" => o.scores = true,
                b"LIMIT" if i + 2 < args.len() => {
                    let (Some(offset), Some(count)) = (int(&args[i + 1]), int(&args[i + 2])) else {
                        return Err(not_integer());
                    };
                    o.limit = Some((offset, count));
                    i += 2;
                }
                b"BYLEX" if zrange => {
                    return Err(Reply::err("BYLEX is not supported by the memory node"))
                }
                _ => return Err(syntax_error()),
            }
            i += 1;
        }
        Ok(o)
    }
}

/// The members ranked `args[2]..=args[3]` of the set at `args[1]` (from the highest with `rev`).
fn range_by_rank(db: &mut Db, args: &[Bytes], rev: bool, scores: bool) -> Reply {
    let (Some(start), Some(stop)) = (int(&args[2]), int(&args[3])) else {
        return not_integer();
    };
    match db.keys.zset(&args[1]) {
        Err(e) => e,
        Ok(set) => flatten(
            set.map_or_else(Vec::new, |s| s.by_rank(start, stop, rev)),
            scores,
        ),
    }
}

/// The members of the set at `args[1]` scored `args[2]..=args[3]` (with `rev`, the range is given
/// high end first and read from it).
fn range_by_score(
    db: &mut Db,
    args: &[Bytes],
    rev: bool,
    limit: Option<(i64, i64)>,
    scores: bool,
) -> Reply {
    let (min, max) = if rev {
        (&args[3], &args[2])
    } else {
        (&args[2], &args[3])
    };
    let (Some(min), Some(max)) = (Bound::parse(min), Bound::parse(max)) else {
        return bad_range();
    };
    let set = match db.keys.zset(&args[1]) {
        Err(e) => return e,
        Ok(set) => set,
    };
    let mut found = set.map_or_else(Vec::new, |s| s.by_score(min, max, rev));
    if let Some((offset, count)) = limit {
        // A negative offset finds nothing; a negative count takes the rest (Redis's rules).
        if offset < 0 {
            found.clear();
        } else {
            let rest = found.into_iter().skip(offset as usize);
            found = match usize::try_from(count) {
                Ok(count) => rest.take(count).collect(),
                Err(_) => rest.collect(),
            };
        }
    }
    flatten(found, scores)
}

/// Members (and their scores, after each one) as one flat array, RESP2's form.
fn flatten(entries: Vec<(Bytes, f64)>, scores: bool) -> Reply {
    let mut out = Vec::with_capacity(entries.len() * if scores { 2 } else { 1 });
    for (member, score) in entries {
        out.push(Reply::Bulk(member));
        if scores {
            out.push(Reply::score(score));
        }
    }
    Reply::Array(out)
}
