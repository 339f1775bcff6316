//! The operator's forced release (behind `Redlock::force_release`; inspect's script is
//! `super::inspect`). It does not take its keys by position: the caller passes every key the list
//! of kinds declares (`super::catalog::Catalog::forced`), and a kind whose queue holds the holder's
//! place adds the Lua that ends it (`super::spec::Forced::Queue`), so a kind added to the list is
//! force-released without an edit here. It returns no lock value.

use super::cmd::Script;

/// Before the kinds' parts: the holder's value, when the resource key holds one (a string: `GET`
/// fails on a reader set, hence `pcall`, which needs no `TYPE`, a command the guide's lock user
/// lacks).
const PRELUDE: &str = "local c, q = tonumber(ARGV[1]), tonumber(ARGV[2]) local v = false \
local g = redis.pcall('GET', KEYS[1]) if type(g) == 'string' then v = g end ";

/// After them: deletes the keys whatever their values and answers how many of the counted ones
/// existed; publishes the release (an empty message on the resource key's channel, which wakes
/// every waiter listening there) when waiters have marked themselves, so they do not sleep out
/// their pauses.
const DELETES: &str = "local n = 0 for i = 1, c do n = n + redis.call('DEL', KEYS[i]) end \
for i = c + 1, c + q do redis.call('DEL', KEYS[i]) end \
for i = 3, #ARGV do if redis.call('EXISTS', KEYS[tonumber(ARGV[i])]) == 1 then \
redis.call('PUBLISH', KEYS[1], '') break end end return n";

/// The forced release with the kinds' queue parts `queues` ([`Script::built`]).
///
/// KEYS: the counted keys (the resource key first), then the other deleted ones, then the kept
/// ones; ARGV: how many are counted, how many more are deleted, then the index among KEYS of each
/// key whose presence means waiters (`Forcing::args`). Kept keys are passed so that a Cluster node
/// set routes one slot. Runs as the guide's lock user or its operator user: `GET`, `DEL`, `EXISTS`,
/// `PUBLISH` (and a kind's part may need that kind's rights where its keys exist: the fair
/// queue's `ZRANGE`).
pub(crate) fn force_release(queues: &[&'static str]) -> &'static Script {
    let mut source = String::from(PRELUDE);
    for lua in queues {
        source.push_str("do ");
        source.push_str(lua);
        source.push_str(" end ");
    }
    source.push_str(DELETES);
    Script::built(source)
}
