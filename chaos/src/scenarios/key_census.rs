//! A census of the lock keys on every node at one moment (scenario 15 takes it just before the
//! `kill -9`): for each resource, on how many of the **surviving** nodes its holder's value lies.
//!
//! Why: a lock is granted once a majority confirmed it, so it may live on just three of five nodes
//! (the other two said "taken" to a racing contender, or timed out). If the killed node is one of the
//! three, the lock has lost its majority with it: no renewal can win again, and its loss when its
//! validity ends is the algorithm working, not a false loss. The census tells those locks apart.

use std::collections::BTreeMap;

use crate::env::Env;

/// Every key matching `ARGV[1]` with its value in hex (values are 20 random bytes), space-separated
/// `key=hex` pairs: one round trip per node, and nothing in it changes the node.
const CENSUS: &str = r#"
local out = {}
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
  local ok, v = pcall(redis.call, 'GET', k)
  if ok and v then
    local h = {}
    for i = 1, #v do h[i] = string.format('%02x', v:byte(i)) end
    out[#out + 1] = k .. '=' .. table.concat(h)
  end
end
return table.concat(out, ' ')
"#;

/// Where one resource's most widely held value lies.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spread {
    /// Nodes holding it.
    pub nodes: usize,
    /// Of those, the ones other than the node about to be lost.
    pub surviving: usize,
}

/// One census: for each resource whose key matched the pattern on some node, the spread of its most
/// widely held value; and how many nodes other than the lost one answered (one that did not counts
/// as holding nothing, so the spreads are then too low).
#[derive(Debug, Default)]
pub struct Census {
    pub spread: BTreeMap<String, Spread>,
    pub answered: usize,
}

/// Takes a census of the keys matching `pattern` (e.g. `redlock:{rn*}`), counting `lost_node` apart.
pub fn take(env: &Env, pattern: &str, lost_node: usize) -> Census {
    let mut by_value: BTreeMap<(String, String), Spread> = BTreeMap::new();
    let mut answered = 0;
    for (i, node) in env.nodes.iter().enumerate() {
        let Some(reply) = node.try_cmd(&[b"EVAL", CENSUS.as_bytes(), b"0", pattern.as_bytes()])
        else {
            continue;
        };
        if i != lost_node {
            answered += 1;
        }
        for pair in reply.split(' ') {
            let Some((key, value)) = pair.split_once('=') else {
                continue;
            };
            let spread = by_value
                .entry((resource(key), value.to_string()))
                .or_default();
            spread.nodes += 1;
            if i != lost_node {
                spread.surviving += 1;
            }
        }
    }
    let mut best: BTreeMap<String, Spread> = BTreeMap::new();
    for ((resource, _), spread) in by_value {
        let slot = best.entry(resource).or_default();
        if spread.nodes > slot.nodes {
            *slot = spread;
        }
    }
    Census {
        spread: best,
        answered,
    }
}

/// `rn7` of `redlock:{rn7}`.
fn resource(key: &str) -> String {
    let inner = key.split_once('{').map_or(key, |(_, rest)| rest);
    inner.trim_end_matches('}').to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_key_names_its_resource() {
        assert_eq!(super::resource("redlock:{rn7}"), "rn7");
        assert_eq!(super::resource("rn7"), "rn7");
    }
}
