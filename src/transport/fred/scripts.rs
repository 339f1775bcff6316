//! Lua scripts over fred: loading them (on every master of a cluster) and `EVALSHA` with the
//! `NOSCRIPT` fallback.

use std::time::Duration;

use ::fred::prelude::{Client, Error as FredError, Key, LuaInterface, Value};

use super::reply::reply;
use crate::protocol::cmd::{NodeResult, Script};

/// Loads every lock script (on every master of a cluster), each bounded by `bound`. Fails only if the
/// server refuses permission (`NOPERM`); other failures leave it to the `NOSCRIPT` path later.
pub(super) async fn load_all(
    client: &Client,
    scripts: &[&'static Script],
    clustered: bool,
    bound: Duration,
) -> Result<(), String> {
    for script in scripts {
        if let Ok(Err(e)) = tokio::time::timeout(bound, load(client, script, clustered)).await {
            if e.details().starts_with("NOPERM") {
                return Err(e.details().to_string());
            }
        }
    }
    Ok(())
}

/// `SCRIPT LOAD`; on a cluster on every master, whichever the key's slot picks next time.
pub(super) async fn load(
    client: &Client,
    script: &'static Script,
    clustered: bool,
) -> Result<Value, FredError> {
    if clustered {
        client.script_load_cluster::<Value, _>(script.source).await
    } else {
        client.script_load::<Value, _>(script.source).await
    }
}

/// `EVALSHA`, falling back to `EVAL` once on `NOSCRIPT` where the script allows it.
pub(super) async fn eval(
    client: &Client,
    script: &'static Script,
    keys: Vec<Key>,
    args: Vec<Value>,
    clustered: bool,
) -> NodeResult {
    match client
        .evalsha::<Value, _, _, _>(script.sha1, keys.clone(), args.clone())
        .await
    {
        // The script did not run, so sending its source is not a replay (see `Script::resend`
        // for why acquire-side scripts reload instead).
        Err(e) if e.details().starts_with("NOSCRIPT") && script.resend => reply(
            client
                .eval::<Value, _, _, _>(script.source, keys, args)
                .await,
        ),
        Err(e) if e.details().starts_with("NOSCRIPT") => {
            let _ = load(client, script, clustered).await;
            reply(Err(e))
        }
        other => reply(other),
    }
}
