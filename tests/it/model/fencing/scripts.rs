//! The fencing model's node transitions against the engine's real scripts on a real node: the same
//! random messages go to [`node_step`] and, as `EVAL` of the script source the engine loads
//! (`redlock_engine::__private::all_scripts()`, found by content), to a redis-server; every answer and
//! the node's state after every message must agree. Expiry is a `DEL` of the lock key on the server
//! and a TTL's step of the model's clock, so the comparison does not depend on timing.

use super::node::{node_step, Answer, Msg, Node, TTL};
use super::BOTH;
use crate::model::sim::Rng;
use crate::model::{engine_script, plain_release, SERVER_TTL_MS};
use testkit::RedisNode;

const LOCK: &[u8] = b"redlock:{model}";
const FENCE: &[u8] = b"redlock:{model}:fence";

/// The three scripts the model's messages stand for.
struct Scripts {
    acquire: &'static str,
    commit: &'static str,
    release: &'static str,
}

impl Scripts {
    fn find() -> Self {
        Self {
            acquire: engine_script("fenced acquire", |s| {
                s.contains("'NX', 'PX'") && s.contains("return '+' .. c")
            }),
            commit: engine_script("fence commit", |s| {
                s.contains("string.rep('0', 20 - #ARGV[2])") && s.contains("'C' .. c")
            }),
            release: plain_release(),
        }
    }
}

fn value(v: u64) -> Vec<u8> {
    format!("v{v}").into_bytes()
}

/// `EVAL script` on `node` with `keys` and `args`; its reply.
fn eval(node: &RedisNode, script: &str, keys: &[&[u8]], args: &[&[u8]]) -> String {
    let count = keys.len().to_string();
    let mut cmd: Vec<&[u8]> = vec![b"EVAL", script.as_bytes(), count.as_bytes()];
    cmd.extend(keys);
    cmd.extend(args);
    node.cmd(&cmd)
}

/// `msg` through its script; the model's answer as the script's reply means it.
fn on_server(node: &RedisNode, scripts: &Scripts, msg: &Msg) -> Option<Answer> {
    let counter = |digits: &str| -> u64 {
        digits
            .parse()
            .unwrap_or_else(|_| panic!("counter {digits:?}"))
    };
    match *msg {
        Msg::Acquire { value: v } => {
            let reply = eval(
                node,
                scripts.acquire,
                &[LOCK, FENCE],
                &[&value(v), SERVER_TTL_MS],
            );
            let (sign, rest) = reply.split_at(1);
            // A refusal also says the holder's time left (`-<counter>:<pttl>`), which the model
            // does not track.
            let digits = rest.split_once(':').map_or(rest, |(c, _)| c);
            Some(Answer::Acquired {
                yes: sign == "+",
                counter: counter(digits),
            })
        }
        Msg::Commit { value: v, token } => {
            let token = token.to_string();
            let reply = eval(
                node,
                scripts.commit,
                &[LOCK, FENCE],
                &[&value(v), token.as_bytes()],
            );
            let (ok, conflict) = match reply.as_str() {
                "1" => (true, None),
                "0" | "-1" => (false, None),
                c if c.starts_with('C') => (false, Some(counter(&c[1..]))),
                other => panic!("commit answered {other:?}"),
            };
            Some(Answer::Committed { ok, conflict })
        }
        Msg::Release { value: v } => {
            eval(node, scripts.release, &[LOCK], &[&value(v)]);
            None
        }
    }
}

fn same(a: &Option<Answer>, b: &Option<Answer>) -> bool {
    match (a, b) {
        (None, None) => true,
        (
            Some(Answer::Acquired { yes, counter }),
            Some(Answer::Acquired { yes: y, counter: c }),
        ) => yes == y && counter == c,
        (
            Some(Answer::Committed { ok, conflict }),
            Some(Answer::Committed { ok: o, conflict: c }),
        ) => ok == o && conflict == c,
        _ => false,
    }
}

fn show(a: &Option<Answer>) -> String {
    match a {
        None => "none".into(),
        Some(Answer::Acquired { yes, counter }) => format!("acquired yes={yes} counter={counter}"),
        Some(Answer::Committed { ok, conflict }) => {
            format!("committed ok={ok} conflict={conflict:?}")
        }
    }
}

#[test]
fn the_node_transitions_match_the_real_scripts() {
    let server = RedisNode::start();
    let scripts = Scripts::find();
    let mut model = Node::default();
    let mut rng = Rng::seeded(25);
    let mut now = 0;
    // (acquire yes, acquire no, commit ok, commit refused, commit conflict)
    let mut seen = [0usize; 5];
    for step in 0..1500 {
        let v = 1 + rng.below(3);
        let msg = match rng.below(10) {
            0 => {
                // The lock key expires: a TTL passes in the model, the key goes on the server.
                now += TTL;
                server.cmd(&[b"DEL", LOCK]);
                continue;
            }
            1..=3 => Msg::Acquire { value: v },
            4..=7 => Msg::Commit {
                value: v,
                token: 1 + rng.below(8),
            },
            _ => Msg::Release { value: v },
        };
        let what = match &msg {
            Msg::Acquire { value } => format!("acquire v{value}"),
            Msg::Commit { value, token } => format!("commit v{value} token {token}"),
            Msg::Release { value } => format!("release v{value}"),
        };
        let real = on_server(&server, &scripts, &msg);
        let modelled = node_step(&mut model, now, msg, BOTH);
        assert!(
            same(&modelled, &real),
            "step {step}, {what}: model {}, script {}",
            show(&modelled),
            show(&real)
        );
        match &real {
            Some(Answer::Acquired { yes: true, .. }) => seen[0] += 1,
            Some(Answer::Acquired { yes: false, .. }) => seen[1] += 1,
            Some(Answer::Committed { ok: true, .. }) => seen[2] += 1,
            Some(Answer::Committed { conflict: None, .. }) => seen[3] += 1,
            Some(Answer::Committed { .. }) => seen[4] += 1,
            None => {}
        }
        // The state after the message: the holder and the counter.
        let holder = model
            .lock
            .filter(|&(_, exp)| exp > now)
            .map_or("nil".to_string(), |(v, _)| format!("v{v}"));
        assert_eq!(server.cmd(&[b"GET", LOCK]), holder, "step {step}, {what}");
        let counter = match server.cmd(&[b"GET", FENCE]).as_str() {
            "nil" => 0,
            c => c.parse().unwrap(),
        };
        assert_eq!(counter, model.counter, "step {step}, {what}");
    }
    assert!(
        seen.iter().all(|&n| n > 0),
        "every outcome came up: {seen:?}"
    );
}
