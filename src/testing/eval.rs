//! The scripting commands: `EVAL`, `EVALSHA` (`NOSCRIPT` when the script is not cached) and
//! `SCRIPT LOAD|EXISTS|FLUSH`. A script runs whole under the node's lock, reading keys at the
//! time it started, as Redis's do; each `redis.call` goes through the dispatch it is handed (the
//! node's command list, `super::commands`).

use bytes::Bytes;

use super::db::Db;
use super::generic::int;
use super::reply::{not_integer, syntax_error, Reply};
use super::state::State;

/// `EVAL source numkeys key... arg...`: compiles and caches the script, then runs it.
pub(crate) fn eval(
    state: &mut State,
    args: &[Bytes],
    dispatch: fn(&mut Db, &[Bytes]) -> Reply,
) -> Reply {
    match state.scripts.load(&args[1]) {
        Ok(sha) => run(state, sha.as_bytes(), &args[2..], dispatch),
        Err(e) => e,
    }
}

/// `EVALSHA sha numkeys key... arg...`.
pub(crate) fn evalsha(
    state: &mut State,
    args: &[Bytes],
    dispatch: fn(&mut Db, &[Bytes]) -> Reply,
) -> Reply {
    run(state, &args[1].clone(), &args[2..], dispatch)
}

/// Runs cached script `sha` on `rest` (`numkeys key... arg...`).
fn run(
    state: &mut State,
    sha: &[u8],
    rest: &[Bytes],
    dispatch: fn(&mut Db, &[Bytes]) -> Reply,
) -> Reply {
    let Some(numkeys) = int(&rest[0]) else {
        return not_integer();
    };
    let Ok(numkeys) = usize::try_from(numkeys) else {
        return Reply::err("Number of keys can't be negative");
    };
    if numkeys > rest.len() - 1 {
        return Reply::err("Number of keys can't be greater than number of args");
    }
    let (keys, argv) = rest[1..].split_at(numkeys);
    let State { db, scripts, .. } = state;
    let mut call = |args: &[Bytes]| dispatch(db, args);
    scripts
        .run(sha, keys, argv, &mut call)
        .unwrap_or_else(|| Reply::Error("NOSCRIPT No matching script. Please use EVAL.".into()))
}

/// `SCRIPT LOAD source`, `SCRIPT EXISTS sha...`, `SCRIPT FLUSH [ASYNC|SYNC]`.
pub(crate) fn script(state: &mut State, args: &[Bytes]) -> Reply {
    match (args[1].to_ascii_uppercase().as_slice(), args.len()) {
        (b"LOAD", 3) => match state.scripts.load(&args[2]) {
            Ok(sha) => Reply::bulk(sha),
            Err(e) => e,
        },
        (b"EXISTS", n) if n > 2 => Reply::Array(
            args[2..]
                .iter()
                .map(|sha| Reply::Int(i64::from(state.scripts.contains(sha))))
                .collect(),
        ),
        (b"FLUSH", 2) => {
            state.scripts.flush();
            Reply::ok()
        }
        (b"FLUSH", 3) if [&b"ASYNC"[..], b"SYNC"].contains(&&args[2].to_ascii_uppercase()[..]) => {
            state.scripts.flush();
            Reply::ok()
        }
        _ => syntax_error(),
    }
}
