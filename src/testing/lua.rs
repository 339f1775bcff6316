//! A node's Lua: one Lua 5.1 interpreter (the version Redis embeds) with Redis's scripting
//! environment — `KEYS`, `ARGV`, `redis.call`, `redis.pcall`, `redis.sha1hex`,
//! `redis.error_reply`, `redis.status_reply`, no new globals — the script cache by SHA1, and
//! Redis's conversions between replies and Lua values, both ways:
//!
//! - to Lua: integer → number, bulk → string, nil → `false`, array → table, status → `{ok=...}`,
//!   error → `{err=...}` (raised by `redis.call`, returned by `redis.pcall`);
//! - from Lua: number → integer (truncated), string → bulk, `true` → 1, `false`/`nil` → nil,
//!   `{err=...}` → error, `{ok=...}` → status, another table → array up to its first nil;
//! - a number given to `redis.call` goes as `%.17g` (`1700000000123`, not `1.700000000123e+12`).
//!
//! The engine's own scripts run here as they are: their sources are what both this interpreter
//! and Redis compile, so a change to a script is tested on both (the differential test).

use std::collections::HashMap;

use bytes::Bytes;
use mlua::{Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value};

use super::reply::{g17, Reply};

/// The Lua side of the environment: `redis.*` around one dispatch function that the node sets for
/// each script run, and the runner that turns an error raised by a script into its message.
const PRELUDE: &str = r#"
local dispatch
local function set_dispatch(f) dispatch = f end
local function error_table(e)
  if type(e) ~= 'string' then return { err = 'ERR wrong number or type of arguments' } end
  if string.sub(e, 1, 1) == '-' then e = string.sub(e, 2) end
  if not string.find(e, ' ', 1, true) then e = 'ERR ' .. e end
  return { err = (string.gsub(e, '[\r\n]+$', '')) }
end
redis = {
  call = function(...)
    local r = dispatch(...)
    if type(r) == 'table' and r.err then error(r, 0) end
    return r
  end,
  pcall = function(...) return dispatch(...) end,
  error_reply = error_table,
  status_reply = function(s)
    if type(s) ~= 'string' then return error_table('wrong number or type of arguments') end
    return { ok = s }
  end,
  log = function() end,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
}
local function run(f)
  local ok, r = pcall(f)
  if ok then return true, r end
  if type(r) == 'table' and type(r.err) == 'string' then return false, r.err end
  return false, 'ERR ' .. tostring(r)
end
dofile, loadfile, print = nil, nil, nil
setmetatable(_G, {
  __index = function(_, name)
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
  end,
  __newindex = function(_, name)
    error("Script attempted to create global variable '" .. tostring(name) .. "'", 2)
  end,
})
return set_dispatch, run
"#;

/// A node's interpreter and its script cache.
pub(crate) struct Scripts {
    lua: Lua,
    set_dispatch: Function,
    run: Function,
    /// Compiled scripts by lowercase SHA1 of their source.
    cache: HashMap<String, Function>,
}

impl std::fmt::Debug for Scripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripts")
            .field("cached", &self.cache.len())
            .finish_non_exhaustive()
    }
}

impl Scripts {
    /// A fresh interpreter with an empty cache.
    pub(crate) fn new() -> Self {
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH,
            LuaOptions::default(),
        )
        .expect("Lua 5.1 starts with its table, string and math libraries");
        let sha1hex = lua
            .create_function(|lua, v: Value| {
                // As Redis's `lua_tolstring`: a number as Lua writes it, anything else as "".
                let text = lua.coerce_string(v).ok().flatten();
                let bytes = text
                    .as_ref()
                    .map(|s| s.as_bytes().to_vec())
                    .unwrap_or_default();
                Ok(sha1_smol::Sha1::from(bytes).digest().to_string())
            })
            .expect("a Rust function");
        let (set_dispatch, run): (Function, Function) = lua
            .load(PRELUDE)
            .set_name("=prelude")
            .call(())
            .expect("the prelude runs");
        let redis: Table = lua
            .globals()
            .raw_get("redis")
            .expect("the prelude made `redis`");
        redis.raw_set("sha1hex", sha1hex).expect("a table");
        Self {
            lua,
            set_dispatch,
            run,
            cache: HashMap::new(),
        }
    }

    /// Compiles `source` into the cache (`SCRIPT LOAD`, and every `EVAL`): its SHA1, or the
    /// compile error.
    pub(crate) fn load(&mut self, source: &[u8]) -> Result<String, Reply> {
        let sha = sha1_smol::Sha1::from(source).digest().to_string();
        if !self.cache.contains_key(&sha) {
            let function = self
                .lua
                .load(source)
                .set_name("=user_script")
                .into_function()
                .map_err(|e| Reply::err(format!("Error compiling script (new function): {e}")))?;
            self.cache.insert(sha.clone(), function);
        }
        Ok(sha)
    }

    /// Whether the script `sha` (any case) is cached.
    pub(crate) fn contains(&self, sha: &[u8]) -> bool {
        self.cache
            .contains_key(&String::from_utf8_lossy(sha).to_ascii_lowercase())
    }

    /// Empties the cache (`SCRIPT FLUSH`, a restart).
    pub(crate) fn flush(&mut self) {
        self.cache.clear();
    }

    /// Runs the cached script `sha` with `keys` and `argv`; `dispatch` runs each `redis.call`. `None`
    /// when the script is not cached (`NOSCRIPT`).
    pub(crate) fn run(
        &mut self,
        sha: &[u8],
        keys: &[Bytes],
        argv: &[Bytes],
        dispatch: &mut dyn FnMut(&[Bytes]) -> Reply,
    ) -> Option<Reply> {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        let script = self.cache.get(&sha)?.clone();
        let outcome = self.lua.scope(|scope| {
            let call = scope.create_function_mut(|lua, args: MultiValue| {
                let reply = match command_args(args) {
                    Ok(args) => dispatch(&args),
                    Err(why) => Reply::Error(why),
                };
                to_lua(lua, reply)
            })?;
            self.set_dispatch.call::<()>(call)?;
            let globals = self.lua.globals();
            globals.raw_set("KEYS", sequence(&self.lua, keys)?)?;
            globals.raw_set("ARGV", sequence(&self.lua, argv)?)?;
            let (ok, value): (bool, Value) = self.run.call(script)?;
            self.set_dispatch.call::<()>(Value::Nil)?;
            Ok(if ok {
                from_lua(value)
            } else {
                let text = match value {
                    Value::String(s) => s.to_string_lossy().to_string(),
                    _ => "ERR script failed".to_string(),
                };
                Reply::Error(format!("{text} script: f_{sha}"))
            })
        });
        Some(outcome.unwrap_or_else(|e| Reply::err(format!("memory node's Lua failed: {e}"))))
    }
}

/// `items` as a Lua sequence of strings: how a script sees its `KEYS` and its `ARGV` alike.
fn sequence(lua: &Lua, items: &[Bytes]) -> mlua::Result<mlua::Table> {
    lua.create_sequence_from(
        items
            .iter()
            .map(|item| lua.create_string(item))
            .collect::<mlua::Result<Vec<_>>>()?,
    )
}

/// A `redis.call`'s arguments as a command: strings as they are, numbers in `%.17g`.
fn command_args(args: MultiValue) -> Result<Vec<Bytes>, String> {
    if args.is_empty() {
        return Err("ERR Please specify at least one argument for this redis lib call".into());
    }
    args.into_iter()
        .map(|v| match v {
            Value::String(s) => Ok(Bytes::copy_from_slice(&s.as_bytes())),
            Value::Integer(i) => Ok(Bytes::from(g17(i as f64))),
            Value::Number(n) => Ok(Bytes::from(g17(n))),
            _ => Err("ERR Lua redis lib command arguments must be strings or integers".into()),
        })
        .collect()
}

/// A reply as `redis.call` hands it to the script.
fn to_lua(lua: &Lua, reply: Reply) -> mlua::Result<Value> {
    Ok(match reply {
        Reply::Int(n) => Value::Number(n as f64),
        Reply::Bulk(b) => Value::String(lua.create_string(&b)?),
        Reply::Nil => Value::Boolean(false),
        Reply::Status(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", lua.create_string(&s)?)?;
            Value::Table(t)
        }
        Reply::Error(e) => {
            let t = lua.create_table()?;
            t.raw_set("err", e)?;
            Value::Table(t)
        }
        Reply::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
    })
}

/// A script's return value as the node's reply.
fn from_lua(value: Value) -> Reply {
    match value {
        Value::String(s) => Reply::Bulk(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Boolean(true) => Reply::Int(1),
        Value::Integer(i) => Reply::Int(i),
        // C's cast: toward zero (Rust's saturates where C's would be undefined).
        Value::Number(n) => Reply::Int(n as i64),
        Value::Table(t) => {
            if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
                return Reply::Error(e.to_string_lossy().to_string());
            }
            if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
                return Reply::Status(Bytes::copy_from_slice(&s.as_bytes()));
            }
            let mut items = Vec::new();
            for i in 1.. {
                match t.raw_get::<Value>(i) {
                    Ok(Value::Nil) | Err(_) => break,
                    Ok(v) => items.push(from_lua(v)),
                }
            }
            Reply::Array(items)
        }
        _ => Reply::Nil,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(scripts: &mut Scripts, source: &str, keys: &[&str], argv: &[&str]) -> Reply {
        let sha = scripts.load(source.as_bytes()).unwrap();
        let keys: Vec<Bytes> = keys
            .iter()
            .map(|k| Bytes::copy_from_slice(k.as_bytes()))
            .collect();
        let argv: Vec<Bytes> = argv
            .iter()
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        let mut echo = |args: &[Bytes]| match &args[0][..] {
            b"ERR" => Reply::Error("WRONGTYPE nope".into()),
            b"OK" => Reply::ok(),
            _ => Reply::Array(args.iter().cloned().map(Reply::Bulk).collect()),
        };
        scripts
            .run(sha.as_bytes(), &keys, &argv, &mut echo)
            .unwrap()
    }

    #[test]
    fn conversions_follow_redis() {
        let mut s = Scripts::new();
        assert_eq!(eval(&mut s, "return 3.99", &[], &[]), Reply::Int(3));
        assert_eq!(eval(&mut s, "return -3.99", &[], &[]), Reply::Int(-3));
        assert_eq!(eval(&mut s, "return true", &[], &[]), Reply::Int(1));
        assert_eq!(eval(&mut s, "return false", &[], &[]), Reply::Nil);
        assert_eq!(eval(&mut s, "return nil", &[], &[]), Reply::Nil);
        assert_eq!(
            eval(&mut s, "return {1, 'a', nil, 2}", &[], &[]),
            Reply::Array(vec![Reply::Int(1), Reply::bulk("a")])
        );
        assert_eq!(
            eval(
                &mut s,
                "return redis.call('x', KEYS[1], 1700000000123, 0.5)",
                &["k"],
                &[]
            ),
            Reply::Array(
                ["x", "k", "1700000000123", "0.5"]
                    .iter()
                    .map(|a| Reply::bulk(*a))
                    .collect()
            )
        );
        assert_eq!(
            eval(&mut s, "return redis.call('OK')['ok']", &[], &[]),
            Reply::bulk("OK")
        );
        assert_eq!(
            eval(&mut s, "return redis.pcall('ERR')['err']", &[], &[]),
            Reply::bulk("WRONGTYPE nope")
        );
        let raised = eval(&mut s, "redis.call('ERR') return 1", &[], &[]);
        assert!(
            matches!(&raised, Reply::Error(e) if e.starts_with("WRONGTYPE nope")),
            "{raised:?}"
        );
        assert_eq!(
            eval(&mut s, "return redis.error_reply('My fault')", &[], &[]),
            Reply::Error("My fault".into())
        );
        assert_eq!(
            eval(&mut s, "return redis.error_reply('oops')", &[], &[]),
            Reply::Error("ERR oops".into())
        );
        assert_eq!(
            eval(&mut s, "return redis.status_reply('FINE')", &[], &[]),
            Reply::Status(Bytes::from_static(b"FINE"))
        );
        assert_eq!(
            eval(&mut s, "return redis.sha1hex(ARGV[1])", &[], &["abc"]),
            Reply::bulk("a9993e364706816aba3e25717850c26c9cd0d89d")
        );
        let global = eval(&mut s, "x = 1 return x", &[], &[]);
        assert!(
            matches!(&global, Reply::Error(e) if e.starts_with("ERR ")),
            "{global:?}"
        );
        assert!(s.load(b"return (").is_err());
        assert!(s.contains(
            sha1_smol::Sha1::from("return 3.99")
                .digest()
                .to_string()
                .to_uppercase()
                .as_bytes()
        ));
    }
}
