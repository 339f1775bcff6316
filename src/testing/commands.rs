//! The one list of commands a memory node answers: each one's name, arity (Redis's convention:
//! `n` exactly, `-n` at least, the name counted) and where it runs — on the data (and so from a
//! script too), on the whole node, as a script, or on the connection itself (`super::conn`). Both
//! dispatches — a client's command, a script's `redis.call` — read this list, with Redis's errors
//! for an unknown command, a wrong arity and a command scripts may not call.

use bytes::Bytes;

use super::db::Db;
use super::reply::Reply;
use super::state::State;
use super::{admin, eval, generic, hashes, pubsub, sorted, strings};

/// How a script's `redis.call` reaches a command (data commands only).
pub(crate) type Dispatch = fn(&mut Db, &[Bytes]) -> Reply;

/// Where a command runs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Run {
    /// On the keys, channels and clock: callable from scripts.
    Data(fn(&mut Db, &[Bytes]) -> Reply),
    /// On the whole node (its identity, its script cache): not from scripts.
    Node(fn(&mut State, &[Bytes]) -> Reply),
    /// Runs a script, whose `redis.call`s take the given dispatch.
    Script(fn(&mut State, &[Bytes], Dispatch) -> Reply),
    /// On the connection (pub/sub, `QUIT`): `super::conn` answers it.
    Connection,
}

/// One command.
#[derive(Debug)]
pub(crate) struct Command {
    pub(crate) name: &'static str,
    arity: i32,
    pub(crate) run: Run,
}

const fn command(name: &'static str, arity: i32, run: Run) -> Command {
    Command { name, arity, run }
}

use Run::{Connection, Data, Node, Script};

/// Every command a memory node knows.
static COMMANDS: &[Command] = &[
    // Strings and keys.
    command("get", 2, Data(strings::get)),
    command("set", -3, Data(strings::set)),
    command("del", -2, Data(generic::del)),
    command("exists", -2, Data(generic::exists)),
    command("type", 2, Data(generic::type_of)),
    command("pexpire", -3, Data(generic::pexpire)),
    command("expire", -3, Data(generic::expire_s)),
    command("pttl", 2, Data(generic::pttl)),
    command("ttl", 2, Data(generic::ttl)),
    command("persist", 2, Data(generic::persist)),
    command("keys", 2, Data(generic::keys)),
    command("dbsize", 1, Data(generic::dbsize)),
    command("flushall", -1, Data(generic::flush)),
    command("flushdb", -1, Data(generic::flush)),
    // Sorted sets.
    command("zadd", -4, Data(sorted::zadd)),
    command("zrem", -3, Data(sorted::zrem)),
    command("zscore", 3, Data(sorted::zscore)),
    command("zcard", 2, Data(sorted::zcard)),
    command("zcount", 4, Data(sorted::zcount)),
    command("zrange", -4, Data(sorted::zrange)),
    command("zrevrange", -4, Data(sorted::zrevrange)),
    command("zrangebyscore", -4, Data(sorted::zrangebyscore)),
    command("zrevrangebyscore", -4, Data(sorted::zrevrangebyscore)),
    command("zremrangebyscore", 4, Data(sorted::zremrangebyscore)),
    command("zpopmin", -2, Data(sorted::zpopmin)),
    command("zpopmax", -2, Data(sorted::zpopmax)),
    // Hashes.
    command("hset", -4, Data(hashes::hset)),
    command("hget", 3, Data(hashes::hget)),
    command("hmget", -3, Data(hashes::hmget)),
    command("hdel", -3, Data(hashes::hdel)),
    command("hgetall", 2, Data(hashes::hgetall)),
    // Pub/sub.
    command("publish", 3, Data(pubsub::publish)),
    command("subscribe", -2, Connection),
    command("unsubscribe", -1, Connection),
    // Scripting.
    command("eval", -3, Script(eval::eval)),
    command("evalsha", -3, Script(eval::evalsha)),
    command("script", -2, Node(eval::script)),
    // The server and the connection.
    command("ping", -1, Data(admin::ping)),
    command("echo", 2, Data(admin::echo)),
    command("time", 1, Data(admin::time)),
    command("info", -1, Node(admin::info)),
    command("config", -2, Node(admin::config)),
    command("client", -2, Node(admin::client)),
    command("auth", -2, Node(admin::auth)),
    command("select", 2, Node(admin::select)),
    command("command", -1, Node(admin::command)),
    command("quit", -1, Connection),
    command("reset", 1, Connection),
];

/// The command named `name` (any case).
pub(crate) fn lookup(name: &[u8]) -> Option<&'static Command> {
    COMMANDS
        .iter()
        .find(|c| name.eq_ignore_ascii_case(c.name.as_bytes()))
}

impl Command {
    /// Whether `args` (the name included) is a count this command takes.
    pub(crate) fn arity_ok(&self, args: &[Bytes]) -> bool {
        let n = args.len() as i32;
        if self.arity >= 0 {
            n == self.arity
        } else {
            n >= -self.arity
        }
    }
}

/// Runs a client's command on the node (a connection command is its connection's: see
/// `super::conn`, which asks [`lookup`] first).
pub(crate) fn execute(state: &mut State, args: &[Bytes]) -> Reply {
    let Some(command) = lookup(&args[0]) else {
        return unknown(args);
    };
    if !command.arity_ok(args) {
        return Reply::err(format!(
            "wrong number of arguments for '{}' command",
            command.name
        ));
    }
    state.db.begin();
    match command.run {
        Data(run) => run(&mut state.db, args),
        Node(run) => run(state, args),
        Script(run) => run(state, args, from_script),
        Connection => Reply::err(format!("'{}' is not allowed here", command.name)),
    }
}

/// Runs a script's `redis.call`: data commands only, at the time the script started.
fn from_script(db: &mut Db, args: &[Bytes]) -> Reply {
    let Some(command) = lookup(&args[0]) else {
        return Reply::err("Unknown Redis command called from script");
    };
    let Data(run) = command.run else {
        return Reply::err("This Redis command is not allowed from script");
    };
    if !command.arity_ok(args) {
        return Reply::err("Wrong number of args calling Redis command from script");
    }
    run(db, args)
}

/// Redis's answer to a command it does not know.
pub(crate) fn unknown(args: &[Bytes]) -> Reply {
    let shown: String = args[1..]
        .iter()
        .take(20)
        .map(|a| format!("'{}' ", String::from_utf8_lossy(a)))
        .collect();
    Reply::err(format!(
        "unknown command '{}', with args beginning with: {shown}",
        String::from_utf8_lossy(&args[0])
    ))
}
