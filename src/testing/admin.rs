//! The server's own commands: `PING`, `ECHO`, `TIME`, `INFO`, `CONFIG GET`, `CLIENT`, `AUTH`,
//! `SELECT`, `COMMAND` — what handshakes and tools send, answered as a Redis 7.0.15 without
//! persistence or password, with one database, would.

use bytes::Bytes;

use super::db::Db;
use super::reply::{syntax_error, Reply};
use super::state::State;

/// The version `INFO server` reports: the release the differential test compares with, whose
/// behaviour the commands here follow.
pub(crate) const VERSION: &str = "7.0.15";

/// `PING [message]`.
pub(crate) fn ping(_: &mut Db, args: &[Bytes]) -> Reply {
    match args.get(1) {
        None => Reply::Status(Bytes::from_static(b"PONG")),
        Some(message) => Reply::Bulk(message.clone()),
    }
}

/// `ECHO message`.
pub(crate) fn echo(_: &mut Db, args: &[Bytes]) -> Reply {
    Reply::Bulk(args[1].clone())
}

/// `TIME`: seconds and microseconds on the node's clock.
pub(crate) fn time(db: &mut Db, _: &[Bytes]) -> Reply {
    let us = db.clock.now_us();
    Reply::Array(vec![
        Reply::bulk(us.div_euclid(1_000_000).to_string()),
        Reply::bulk(us.rem_euclid(1_000_000).to_string()),
    ])
}

/// `INFO [section...]`: the server section, with what the engine's handshake reads (`run_id`,
/// `uptime_in_seconds`, `redis_version`), for any section asked.
pub(crate) fn info(state: &mut State, _: &[Bytes]) -> Reply {
    let now_ms = state.db.clock.now_ms();
    let id = &state.identity;
    // Negative after a step back past the start, as on a real server (the engine copes).
    let uptime = (now_ms - id.started_ms).div_euclid(1000);
    let text = format!(
        "# Server\r\nredis_version:{VERSION}\r\nredis_mode:standalone\r\nos:redlock-engine memory node\r\n\
arch_bits:64\r\nprocess_id:{pid}\r\nrun_id:{run_id}\r\ntcp_port:{port}\r\nserver_time_usec:{now_us}\r\n\
uptime_in_seconds:{uptime}\r\nuptime_in_days:{days}\r\n",
        pid = std::process::id(),
        run_id = id.run_id,
        port = id.port,
        now_us = state.db.clock.now_us(),
        days = uptime.div_euclid(86_400),
    );
    Reply::bulk(text)
}

/// `CONFIG GET parameter`: the persistence settings a durable node's handshake asks about (off:
/// a memory node loses everything at a restart), nothing for the rest. `CONFIG SET` is refused.
pub(crate) fn config(_: &mut State, args: &[Bytes]) -> Reply {
    let sub = args[1].to_ascii_uppercase();
    match (sub.as_slice(), args.get(2)) {
        (b"GET", Some(name)) if args.len() == 3 => {
            let value = match name.to_ascii_lowercase().as_slice() {
                b"appendonly" => "no",
                b"appendfsync" => "everysec",
                b"save" => "",
                b"databases" => "1",
                _ => return Reply::Array(Vec::new()),
            };
            Reply::Array(vec![Reply::Bulk(name.clone()), Reply::bulk(value)])
        }
        (b"RESETSTAT", None) => Reply::ok(),
        _ => Reply::err("the memory node answers CONFIG GET only"),
    }
}

/// `CLIENT SETNAME|GETNAME|ID|SETINFO|NO-EVICT|NO-TOUCH`: accepted, as clients send them at connect.
pub(crate) fn client(_: &mut State, args: &[Bytes]) -> Reply {
    match args[1].to_ascii_uppercase().as_slice() {
        b"SETNAME" | b"SETINFO" | b"NO-EVICT" | b"NO-TOUCH" | b"REPLY" => Reply::ok(),
        b"GETNAME" => Reply::Nil,
        b"ID" => Reply::Int(1),
        _ => syntax_error(),
    }
}

/// `AUTH [user] password`: a memory node has no password, as a Redis without `requirepass`.
pub(crate) fn auth(_: &mut State, args: &[Bytes]) -> Reply {
    match (args.len(), &args[1][..]) {
        // The default user has no password: any is accepted for it.
        (3, b"default") => return Reply::ok(),
        (3, _) => {
            return Reply::Error(
                "WRONGPASS invalid username-password pair or user is disabled.".into(),
            )
        }
        _ => {}
    }
    Reply::err(
        "AUTH <password> called without any password configured for the default user. \
Are you sure your configuration is correct?",
    )
}

/// `SELECT db`: one database, as a Redis run with `databases 1`.
pub(crate) fn select(_: &mut State, args: &[Bytes]) -> Reply {
    match &args[1][..] {
        b"0" => Reply::ok(),
        _ => Reply::err("DB index is out of range"),
    }
}

/// `COMMAND ...`: an empty list (tools that read it cope).
pub(crate) fn command(_: &mut State, _: &[Bytes]) -> Reply {
    Reply::Array(Vec::new())
}
