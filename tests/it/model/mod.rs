//! Deterministic simulations of protocols, checked over many seeds: the fair lock's queue
//! (`fair`), the fencing token's commit (`fencing`) and the plain lock's cross-process hand-off
//! (`handoff`). All run on one simulation core (`sim`: the RNG and the event queue).
//! `fencing::scripts` runs the fencing model's node transitions through the engine's real Lua
//! scripts on a real node and compares; `handoff` runs its nodes as real servers with the real
//! scripts throughout.

mod fair;
mod fencing;
mod handoff;
mod sim;
mod wire;

/// The TTL the script models give their keys: far beyond a run, so nothing expires on its own and
/// a run does not depend on timing (expiry is the simulations' own).
const SERVER_TTL_MS: &[u8] = b"600000";

/// The engine's script that `is` picks out (the shortest of those it picks), by its source as the
/// engine loads it (`redlock_engine::__private::all_scripts`): the models send the real scripts.
fn engine_script(what: &str, is: impl Fn(&str) -> bool) -> &'static str {
    let all = redlock_engine::__private::all_scripts();
    let found = all.iter().map(|(src, _)| *src).filter(|s| is(s));
    found
        .min_by_key(|s| s.len())
        .unwrap_or_else(|| panic!("no {what} script among the engine's scripts"))
}

/// The plain owner-checked release (the shortest: the others also notify or unmark).
fn plain_release() -> &'static str {
    engine_script("release", |s| {
        s.starts_with("local v = redis.call('GET', KEYS[1])")
            && s.contains("return redis.call('DEL', KEYS[1])")
            && !s.contains("KEYS[2]")
    })
}
