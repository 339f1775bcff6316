//! The fair model's node transitions against the engine's real scripts on a real node: the same
//! random messages go to [`Node::step`] and, as `EVAL` of the script source the engine loads, to a
//! redis-server; every answer, the lock key and the queue after every message, and whether the
//! message woke the head (the `PUBLISH` on its wake channel, read by a pattern subscription) must
//! agree. Nothing expires (the server's TTL is far beyond the test), so the comparison does not
//! depend on timing; expiry and pruning are the simulation's (`super::sim`).

use super::node::{Answer, Msg, Node, Rules};
use crate::model::sim::Rng;
use crate::model::wire::Listened;
use crate::model::{engine_script, SERVER_TTL_MS};

const LOCK: &[u8] = b"redlock:{fair-model}";
/// The lock key and the queue: the fair scripts' `KEYS`.
const KEYS: [&[u8]; 2] = [LOCK, b"redlock:{fair-model}:fair:q"];

/// The engine's script a message of the model stands for.
fn script_of(msg: Msg) -> &'static str {
    match msg {
        Msg::Enqueue { .. } => engine_script("fair enqueue", |s| {
            s.contains("local top = redis.call('ZREVRANGE', KEYS[2], 0, 0, 'WITHSCORES')")
        }),
        Msg::Attempt { .. } => engine_script("fair attempt", |s| {
            s.contains("redis.call('ZADD', KEYS[2], 'XX', ARGV[3], ARGV[1])")
        }),
        Msg::Unlock { .. } => {
            engine_script("fair unlock", |s| s.contains("if h and h ~= ARGV[1] then"))
        }
        Msg::Leave { .. } => engine_script("fair leave", |s| {
            s.contains("if l and l > tonumber(ARGV[2]) then return 0 end")
        }),
        Msg::Release => engine_script("fair release", |s| {
            s.starts_with(
                "local v = redis.call('GET', KEYS[1]) local top = redis.call('ZRANGE', KEYS[2], 0, 1) ",
            )
        }),
        Msg::ReleaseTo { .. } => engine_script("fair release to", |s| {
            s.contains("string.sub(d, 1, 13), 16) == tonumber(ARGV[4])")
        }),
    }
}

/// Waiter `w`'s value: 25 bytes, zero-padded so that the server orders equal tickets by waiter as
/// the model does.
fn value(w: u64) -> Vec<u8> {
    format!("00000000q{w:016}").into_bytes()
}

fn sha1(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

/// Waiter `w`'s wake name: 16 hex digits of its value's SHA1.
fn name(w: u64) -> String {
    sha1(&value(w))[..16].to_string()
}

/// Sends `msg` of waiter `w` to the server: its answer as the model's, and the wake names published.
fn on_server(node: &mut Listened, w: u64, msg: Msg) -> (Option<Answer>, Vec<Vec<u8>>) {
    let keys = KEYS;
    let v = value(w);
    let script = script_of(msg);
    let (reply, published) = match msg {
        Msg::Enqueue { hint: x, epoch } | Msg::Attempt { ticket: x, epoch } => {
            let (x, epoch) = (x.to_string(), epoch.to_string());
            node.eval(
                script,
                &keys,
                &[&v, SERVER_TTL_MS, x.as_bytes(), epoch.as_bytes()],
            )
        }
        Msg::Unlock { epoch } => {
            let epoch = epoch.to_string();
            node.eval(script, &keys, &[&v, SERVER_TTL_MS, epoch.as_bytes()])
        }
        Msg::Leave { epoch } => {
            let epoch = epoch.to_string();
            node.eval(script, &keys, &[&v, epoch.as_bytes()])
        }
        Msg::Release => node.eval(script, &keys, &[&v]),
        Msg::ReleaseTo { next, ticket, .. } => {
            // The engine's `successor_name`: the next waiter's value digest, 13 hex digits.
            let name = u64::from_str_radix(&sha1(&value(next))[..13], 16).unwrap();
            let (ticket, name) = (ticket.to_string(), name.to_string());
            let args: [&[u8]; 4] = [&v, SERVER_TTL_MS, ticket.as_bytes(), name.as_bytes()];
            node.eval(script, &keys, &args)
        }
    };
    let answer = match msg {
        Msg::Enqueue { .. } => {
            let (granted, ticket) = reply.split_at(1);
            Some(Answer::Placed {
                granted: granted == "G",
                ticket: ticket.parse().expect("an enqueue answers its ticket"),
            })
        }
        Msg::Attempt { .. } => Some(match reply.as_str() {
            "G" => Answer::Granted,
            "Q" => Answer::Queued,
            "L" => Answer::Missing,
            other => panic!("attempt answered {other:?}"),
        }),
        Msg::ReleaseTo { next, .. } => Some(Answer::Released {
            granted: reply.ends_with(&format!("G{}", sha1(&value(next)))),
        }),
        _ => None,
    };
    let woken = published.into_iter().map(|(_, name)| name).collect();
    (answer, woken)
}

/// The server's queue: `(waiter, ticket)` in the server's order.
fn queue_on(node: &Listened) -> Vec<(u64, u64)> {
    let all = node
        .server
        .cmd(&[b"ZRANGE", KEYS[1], b"0", b"-1", b"WITHSCORES"]);
    let parts: Vec<&str> = all.split_whitespace().collect();
    parts
        .chunks(2)
        .map(|p| (p[0][9..].parse().unwrap(), p[1].parse().unwrap()))
        .collect()
}

#[test]
fn the_node_transitions_match_the_real_scripts() {
    let mut node = Listened::start(b"*:w:*");
    // What the runs exercised: grants (an enqueue's, an attempt's, a release's to a named waiter)
    // and wake-ups.
    let (mut grants, mut wakes, mut by_message) = (0, 0, 0);
    for seed in 0..40u64 {
        node.server.cmd(&[b"FLUSHALL"]);
        let mut model = Node::default();
        let mut rng = Rng::seeded(seed);
        for step in 0..60 {
            let w = 1 + rng.below(4);
            let epoch = 1 + step;
            let msg = match rng.below(6) {
                // Hints are at least 1, as the engine sends them (`enqueue_cmd`).
                0 => Msg::Enqueue {
                    hint: 1 + rng.below(12),
                    epoch,
                },
                1 | 2 => Msg::Attempt {
                    ticket: rng.below(12),
                    epoch,
                },
                // Half the time the round's own (the live key's, plus one), else most likely a late
                // copy's or a stray one's.
                3 => Msg::Unlock {
                    epoch: match model.epochs.get(&w) {
                        Some(e) if rng.chance(50) => e + 1,
                        _ => rng.below(epoch + 2),
                    },
                },
                4 if rng.chance(50) => Msg::Leave {
                    epoch: rng.below(epoch + 2),
                },
                4 => Msg::Release,
                _ => Msg::ReleaseTo {
                    holder: w,
                    next: 1 + rng.below(4),
                    ticket: rng.below(12),
                    claim: 0,
                },
            };
            let what = format!("seed {seed}, step {step}: waiter {w} {msg:?}");
            let expected = model.step(0, w, msg, Rules::Real);
            let (answer, woken) = on_server(&mut node, w, msg);
            assert_eq!(answer, expected.answer, "{what}");
            // The model's wake names its head; one with no head wakes nobody. A release's grant
            // names the waiter it set the key to, and a digest of its value and epoch.
            let head = model.head().filter(|_| expected.publish);
            let mut named: Vec<Vec<u8>> = Vec::from_iter(head.map(|h| name(h).into_bytes()));
            if let Some((h, e)) = expected.grant {
                let mut v = value(h);
                v.extend_from_slice(format!(":{e}").as_bytes());
                named.push(format!("{}g{}", name(h), &sha1(&v)[..16]).into_bytes());
                by_message += 1;
            }
            assert_eq!(woken, named, "{what}: wake-ups and grant messages");
            let holder = node.get(LOCK);
            let model_holder = model.lock.map(|(v, _)| value(v));
            assert_eq!(holder, model_holder, "{what}: the lock key");
            let mut queue: Vec<(u64, u64)> =
                model.queue.iter().map(|(&w, &(t, _))| (w, t)).collect();
            queue.sort_by_key(|&(w, t)| (t, w));
            assert_eq!(queue_on(&node), queue, "{what}: the queue");
            grants += u32::from(matches!(
                answer,
                Some(
                    Answer::Placed { granted: true, .. }
                        | Answer::Granted
                        | Answer::Released { granted: true }
                )
            ));
            wakes += u32::from(!woken.is_empty());
        }
    }
    eprintln!("2,400 messages: {grants} grants, {wakes} wake-ups, {by_message} grants by message");
    assert!(
        grants > 100 && wakes > 100 && by_message > 50,
        "{grants} grants, {wakes} wake-ups, {by_message} by message"
    );
}
