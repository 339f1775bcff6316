//! A deterministic simulation of the fencing-token protocol (see `src/fence.rs`): nodes with lock keys
//! and fence counters, clients that acquire, commit, hold and release, with random message delay, loss
//! and client pauses. The property: ordered by when their commit completed, usable tokens strictly
//! increase. A scripted trace shows the check is not blind: with neither of the commit's guards a
//! token repeats, with either one it does not.

use std::collections::BinaryHeap;

/// xorshift64*: deterministic per seed, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[derive(Clone, Copy)]
struct Guards {
    /// The commit raises a counter only while the committer's lock value is on the node.
    check_owner: bool,
    /// The commit refuses (CONFLICT) when the counter is already at or above the proposal.
    conflict: bool,
}

const TTL: u64 = 100;
const TIMEOUT: u64 = 10;
const DRIFT: u64 = 2;

#[derive(Default)]
struct Node {
    /// (value, expires_at)
    lock: Option<(u64, u64)>,
    counter: u64,
}

enum Msg {
    Acquire { value: u64 },
    Commit { value: u64, token: u64 },
    Release { value: u64 },
}

#[derive(Clone)]
enum Answer {
    Acquired { yes: bool, counter: u64 },
    Committed { ok: bool, conflict: Option<u64> },
}

/// One node handling one message atomically, as its Lua script does.
fn node_step(node: &mut Node, now: u64, msg: Msg, guards: Guards) -> Option<Answer> {
    if node.lock.is_some_and(|(_, exp)| exp <= now) {
        node.lock = None;
    }
    match msg {
        Msg::Acquire { value } => {
            let yes = node.lock.is_none();
            if yes {
                node.lock = Some((value, now + TTL));
            }
            Some(Answer::Acquired {
                yes,
                counter: node.counter,
            })
        }
        Msg::Commit { value, token } => {
            let owner = node.lock.is_some_and(|(v, _)| v == value);
            if guards.check_owner && !owner {
                Some(Answer::Committed {
                    ok: false,
                    conflict: None,
                })
            } else if guards.conflict && node.counter >= token {
                Some(Answer::Committed {
                    ok: false,
                    conflict: Some(node.counter),
                })
            } else {
                node.counter = node.counter.max(token);
                Some(Answer::Committed {
                    ok: true,
                    conflict: None,
                })
            }
        }
        Msg::Release { value } => {
            if node.lock.is_some_and(|(v, _)| v == value) {
                node.lock = None;
            }
            None
        }
    }
}

struct Event {
    at: u64,
    seq: u64,
    kind: EventKind,
}

enum EventKind {
    AtNode {
        node: usize,
        client: usize,
        round: u64,
        msg: Msg,
    },
    AtClient {
        client: usize,
        round: u64,
        answer: Answer,
    },
    Wake {
        client: usize,
        round: u64,
    },
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq)) // min-heap
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Idle,
    Acquiring { start: u64 },
    Committing { valid_until: u64, token: u64 },
}

struct Client {
    phase: Phase,
    round: u64,
    value: u64,
    yes: usize,
    no: usize,
    max_counter: u64,
    conflicts: usize,
    commits: usize,
}

struct Grant {
    token: u64,
    committed_at: u64,
}

struct Sim {
    rng: Rng,
    guards: Guards,
    nodes: Vec<Node>,
    clients: Vec<Client>,
    events: BinaryHeap<Event>,
    seq: u64,
    now: u64,
    grants: Vec<Grant>,
    next_value: u64,
}

impl Sim {
    fn push(&mut self, at: u64, kind: EventKind) {
        self.seq += 1;
        self.events.push(Event {
            at,
            seq: self.seq,
            kind,
        });
    }

    /// Sends `msg` to every node; each copy may be lost or delayed (up to a whole TTL: a paused or slow
    /// network), and so may its answer.
    fn broadcast(&mut self, client: usize, round: u64, make: impl Fn() -> Msg) {
        for node in 0..self.nodes.len() {
            if self.rng.chance(10) {
                continue; // lost
            }
            let delay = if self.rng.chance(10) {
                self.rng.below(TTL)
            } else {
                self.rng.below(4)
            };
            self.push(
                self.now + delay,
                EventKind::AtNode {
                    node,
                    client,
                    round,
                    msg: make(),
                },
            );
        }
    }

    fn start_acquire(&mut self, c: usize) {
        self.next_value += 1;
        let value = self.next_value;
        let cl = &mut self.clients[c];
        cl.round += 1;
        cl.value = value;
        cl.phase = Phase::Acquiring { start: self.now };
        (cl.yes, cl.no, cl.max_counter) = (0, 0, 0);
        let round = cl.round;
        self.broadcast(c, round, || Msg::Acquire { value });
        self.push(self.now + TIMEOUT, EventKind::Wake { client: c, round });
    }

    fn start_commit(&mut self, c: usize, valid_until: u64, floor: u64) {
        let cl = &mut self.clients[c];
        cl.round += 1;
        let token = floor + 1;
        cl.phase = Phase::Committing { valid_until, token };
        (cl.commits, cl.conflicts) = (0, 0);
        let (round, value) = (cl.round, cl.value);
        // A client may pause right before sending its commit: the commit then lands late.
        let pause = if self.rng.chance(15) {
            self.rng.below(2 * TTL)
        } else {
            0
        };
        let at = self.now + pause;
        for node in 0..self.nodes.len() {
            if self.rng.chance(10) {
                continue;
            }
            let delay = if self.rng.chance(10) {
                self.rng.below(TTL)
            } else {
                self.rng.below(4)
            };
            self.push(
                at + delay,
                EventKind::AtNode {
                    node,
                    client: c,
                    round,
                    msg: Msg::Commit { value, token },
                },
            );
        }
        self.push(
            (at + TIMEOUT).min(valid_until.max(self.now)),
            EventKind::Wake { client: c, round },
        );
    }

    fn at_node(&mut self, n: usize, client: usize, round: u64, msg: Msg) {
        let now = self.now;
        if let Some(answer) = node_step(&mut self.nodes[n], now, msg, self.guards) {
            if !self.rng.chance(10) {
                let delay = self.rng.below(4);
                self.push(
                    now + delay,
                    EventKind::AtClient {
                        client,
                        round,
                        answer,
                    },
                );
            }
        }
    }

    fn at_client(&mut self, c: usize, round: u64, answer: Answer) {
        let quorum = self.nodes.len() / 2 + 1;
        let now = self.now;
        let cl = &mut self.clients[c];
        if cl.round != round {
            return; // a late answer of an earlier round never counts
        }
        match (cl.phase, answer) {
            (Phase::Acquiring { start }, Answer::Acquired { yes, counter }) => {
                cl.max_counter = cl.max_counter.max(counter);
                if yes {
                    cl.yes += 1
                } else {
                    cl.no += 1
                }
                if cl.yes >= quorum {
                    let valid_until = start + TTL - DRIFT;
                    let floor = cl.max_counter;
                    if now < valid_until {
                        self.start_commit(c, valid_until, floor);
                    }
                }
            }
            (Phase::Committing { valid_until, token }, Answer::Committed { ok, conflict }) => {
                if ok {
                    cl.commits += 1
                }
                if let Some(counter) = conflict {
                    cl.conflicts += 1;
                    cl.max_counter = cl.max_counter.max(counter);
                }
                if cl.commits >= quorum && now < valid_until {
                    self.grants.push(Grant {
                        token,
                        committed_at: now,
                    });
                    let value = cl.value;
                    cl.phase = Phase::Idle;
                    cl.round += 1;
                    let round = cl.round;
                    let hold = self.rng.below(valid_until - now);
                    // Hold, then release (fire and forget) and come back later.
                    self.push(now + hold, EventKind::Wake { client: c, round });
                    let _ = value;
                }
            }
            _ => {}
        }
    }

    fn wake(&mut self, c: usize, round: u64) {
        let cl = &self.clients[c];
        if cl.round != round {
            return;
        }
        match cl.phase {
            Phase::Idle => {
                let value = cl.value;
                let r = cl.round;
                self.broadcast(c, r, || Msg::Release { value });
                self.start_acquire_later(c);
            }
            Phase::Acquiring { .. } => {
                // Lost or too slow: release everywhere, retry after a random pause.
                let value = cl.value;
                let r = cl.round;
                self.broadcast(c, r, || Msg::Release { value });
                self.start_acquire_later(c);
            }
            Phase::Committing { valid_until, .. } => {
                let (conflicts, floor) = (cl.conflicts, cl.max_counter);
                if conflicts > 0 && self.now < valid_until {
                    self.start_commit(c, valid_until, floor);
                } else {
                    let value = cl.value;
                    let r = cl.round;
                    self.broadcast(c, r, || Msg::Release { value });
                    self.start_acquire_later(c);
                }
            }
        }
    }

    fn start_acquire_later(&mut self, c: usize) {
        let cl = &mut self.clients[c];
        cl.phase = Phase::Idle;
        cl.round += 1;
        cl.value = 0;
        let round = cl.round;
        let pause = self.rng.below(30);
        // value 0 marks "idle, acquire at wake"
        self.push(self.now + pause, EventKind::Wake { client: c, round });
    }

    fn run(&mut self, until: u64) {
        for c in 0..self.clients.len() {
            self.start_acquire(c);
        }
        while let Some(ev) = self.events.pop() {
            if ev.at > until {
                break;
            }
            self.now = ev.at;
            match ev.kind {
                EventKind::AtNode {
                    node,
                    client,
                    round,
                    msg,
                } => self.at_node(node, client, round, msg),
                EventKind::AtClient {
                    client,
                    round,
                    answer,
                } => self.at_client(client, round, answer),
                EventKind::Wake { client, round } => {
                    if self.clients[client].phase == Phase::Idle && self.clients[client].value == 0
                    {
                        if self.clients[client].round == round {
                            self.start_acquire(client);
                        }
                    } else {
                        self.wake(client, round);
                    }
                }
            }
        }
    }

    /// The first pair of grants whose tokens do not increase with commit order, if any.
    fn violation(&self) -> Option<(u64, u64)> {
        let mut grants: Vec<&Grant> = self.grants.iter().collect();
        grants.sort_by_key(|g| g.committed_at);
        grants
            .windows(2)
            .find(|w| w[1].token <= w[0].token)
            .map(|w| (w[0].token, w[1].token))
    }
}

fn simulate(
    seed: u64,
    nodes: usize,
    clients: usize,
    guards: Guards,
) -> (usize, Option<(u64, u64)>) {
    let mut sim = Sim {
        rng: Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
        guards,
        nodes: (0..nodes).map(|_| Node::default()).collect(),
        clients: (0..clients)
            .map(|_| Client {
                phase: Phase::Idle,
                round: 0,
                value: 0,
                yes: 0,
                no: 0,
                max_counter: 0,
                conflicts: 0,
                commits: 0,
            })
            .collect(),
        events: BinaryHeap::new(),
        seq: 0,
        now: 0,
        grants: Vec::new(),
        next_value: 0,
    };
    sim.run(4_000);
    (sim.grants.len(), sim.violation())
}

const BOTH: Guards = Guards {
    check_owner: true,
    conflict: true,
};
const NEITHER: Guards = Guards {
    check_owner: false,
    conflict: false,
};

#[test]
fn tokens_increase_with_both_guards() {
    let mut grants = 0;
    for seed in 0..100 {
        for (nodes, clients) in [(3, 2), (3, 3), (5, 2), (5, 3)] {
            let (g, violation) = simulate(seed, nodes, clients, BOTH);
            grants += g;
            assert_eq!(
                violation, None,
                "seed {seed}, {nodes} nodes, {clients} clients"
            );
        }
    }
    assert!(
        grants > 2_000,
        "the simulation must exercise the protocol: {grants} grants"
    );
}

/// The trace behind "keep both guards": A holds n1, n2 (its SET to n3 was lost) and commits token 1
/// to n2 and n3 while B's early SET holds n3; B's SET to n1 lands after A's keys expired; B read
/// counter 0 on n3 and n1 and proposes 1 again. Returns the tokens A and B end up using.
fn scripted_trace(guards: Guards) -> (Option<u64>, Option<u64>) {
    let mut n: Vec<Node> = (0..3).map(|_| Node::default()).collect();
    let (a, b) = (1, 2);
    let quorum = 2;
    let yes = |ans: Option<Answer>| matches!(ans, Some(Answer::Acquired { yes: true, .. }));
    // t=0: A acquires n1, n2 (n3 lost). Floor 0, proposal 1, valid until 98.
    assert!(yes(node_step(
        &mut n[0],
        0,
        Msg::Acquire { value: a },
        guards
    )));
    assert!(yes(node_step(
        &mut n[1],
        0,
        Msg::Acquire { value: a },
        guards
    )));
    // t=5: B's SET reaches n3 (free).
    let b_n3 = node_step(&mut n[2], 5, Msg::Acquire { value: b }, guards);
    // t=6: A's commit of 1 reaches n2 and n3 (its copy to n1 is lost).
    let mut a_ok = 0;
    for node in [1, 2] {
        if let Some(Answer::Committed { ok: true, .. }) =
            node_step(&mut n[node], 6, Msg::Commit { value: a, token: 1 }, guards)
        {
            a_ok += 1;
        }
    }
    let a_token = (a_ok >= quorum).then_some(1);
    // t=101: B's SET reaches n1 after A's keys expired; B has n3 and n1, both read counter 0.
    let b_n1 = node_step(&mut n[0], 101, Msg::Acquire { value: b }, guards);
    assert!(yes(b_n3.clone()) && yes(b_n1.clone()), "B wins n3 and n1");
    let floor = [b_n3, b_n1]
        .into_iter()
        .filter_map(|ans| match ans {
            Some(Answer::Acquired { counter, .. }) => Some(counter),
            _ => None,
        })
        .max()
        .unwrap();
    // t=102: B commits floor+1 to n1 and n3, retrying above any conflict (B valid until 103).
    let mut token = floor + 1;
    for _ in 0..3 {
        let mut ok = 0;
        let mut conflict = None;
        for node in [0, 2] {
            match node_step(&mut n[node], 102, Msg::Commit { value: b, token }, guards) {
                Some(Answer::Committed { ok: true, .. }) => ok += 1,
                Some(Answer::Committed {
                    conflict: Some(c), ..
                }) => conflict = Some(c),
                _ => {}
            }
        }
        if ok >= quorum {
            return (a_token, Some(token));
        }
        match conflict {
            Some(c) => token = c + 1,
            None => break,
        }
    }
    (a_token, None)
}

#[test]
fn each_guard_alone_stops_the_repeated_token_and_neither_does_not() {
    let repeated = |g: Guards| {
        let (a, b) = scripted_trace(g);
        matches!((a, b), (Some(a), Some(b)) if b <= a)
    };
    assert!(repeated(NEITHER), "without both guards B reuses A's token");
    assert!(!repeated(Guards {
        check_owner: true,
        conflict: false
    }));
    assert!(!repeated(Guards {
        check_owner: false,
        conflict: true
    }));
    assert!(!repeated(BOTH));
}
