//! A randomized simulation of the plain lock's cross-process hand-off (`src/protocol/handoff.rs`)
//! run on real nodes with the engine's real scripts: waiters that take over (`TAKE_OVER`), step
//! back to the nodes that said yes and move to their value's next epoch, count the grants the
//! holder's release (`RELEASE_HANDOFF`) publishes for their current value, and on winning unmark
//! and release their retired values, as `engine::takeover` and `engine::acquire` do. Every command
//! and every grant message is delayed at random (in order per node, as on one connection; a
//! command or its reply may be lost), so a grant message can arrive after the waiter's own step
//! back deleted that grant.
//!
//! Nothing expires (TTLs far beyond the test), so the property is exact: **a waiter that believes
//! it holds the lock has its value on a majority of nodes**, checked on the servers when it wins
//! and after every event until it sends its release. Grants are heard on one pattern subscription
//! per node (`*:h:*`: every waiter listens; `super::wire`).
//!
//! Waiters that count every grant they hear on their channel, whatever its epoch, show the check is
//! not blind: they come to believe they hold nodes their own step back took from them.

use super::sim::{Queue, Rng};
use super::wire::Listened;
use super::{engine_script, plain_release};

const KEY: &[u8] = b"redlock:{handoff-model}";
/// The lock's and the list's TTL: far beyond the test, so nothing expires on its own.
const TTL_MS: u64 = 600_000;
/// A release's reservation where the waiter it names does not listen (never here).
const RESERVE_MS: &[u8] = b"1";
/// Simulated time a run lasts (a command's delay is 1-8 of its units).
const END: u64 = 3_000;

/// The scripts the waiters and holders send, found by content among the engine's.
struct Scripts {
    take_over: &'static str,
    release_handoff: &'static str,
    step_back: &'static str,
    unmark: &'static str,
    release: &'static str,
}

impl Scripts {
    fn find() -> Self {
        Self {
            take_over: engine_script("take-over", |s| s.contains("'ZADD', q, 'NX', ARGV[5], m")),
            release_handoff: engine_script("hand-off release", |s| {
                s.contains("'ZPOPMIN', KEYS[1] .. ':wait'")
            }),
            step_back: engine_script("step back", |s| {
                s.contains("if v == ARGV[1] then if ARGV[2] == '0' then")
            }),
            unmark: engine_script("unmark", |s| s.contains("sweep(4, nil)")),
            release: plain_release(),
        }
    }
}

/// What a command a waiter or holder sends does.
#[derive(Clone)]
enum Cmd {
    TakeOver {
        value: Vec<u8>,
        since: u64,
        sweep: bool,
    },
    StepBack {
        value: Vec<u8>,
    },
    Unmark {
        value: Vec<u8>,
        since: u64,
        sweep: bool,
    },
    Release {
        value: Vec<u8>,
    },
    HandOff {
        value: Vec<u8>,
    },
}

enum Ev {
    Start(usize),
    /// A command reaching its node; `round`: a take-over of that round, whose reply counts.
    Deliver {
        client: usize,
        node: usize,
        cmd: Cmd,
        round: Option<u64>,
    },
    Reply {
        client: usize,
        node: usize,
        round: u64,
        yes: bool,
    },
    Grant {
        client: usize,
        node: usize,
        message: Vec<u8>,
    },
    Timeout {
        client: usize,
        round: u64,
    },
    Retry {
        client: usize,
        round: u64,
    },
    Release(usize),
}

#[derive(PartialEq)]
enum State {
    Idle,
    Round,
    Pause,
    Holding,
}

struct Client {
    name: u64,
    /// The wait's value but its last byte (the epoch).
    base: Vec<u8>,
    epoch: u8,
    since: u64,
    state: State,
    round: u64,
    yes: u16,
    answered: u16,
    heard: u16,
    retired: Vec<Vec<u8>>,
    /// When each node's link (commands out) and grant channel (messages in) are next free.
    out: Vec<u64>,
    inbox: Vec<u64>,
}

impl Client {
    fn value(&self) -> Vec<u8> {
        let mut v = self.base.clone();
        v.push(self.epoch);
        v
    }

    /// What a release that grants this waiter's current entry publishes (`Entry::grant_message`).
    fn grant_message(&self) -> Vec<u8> {
        let mut entry = format!("{}:{}:", self.name, TTL_MS).into_bytes();
        entry.extend_from_slice(&self.value());
        let hex = sha1_smol::Sha1::from(&entry).digest().to_string();
        let mut m = b"g".to_vec();
        m.extend_from_slice(&hex.as_bytes()[..16]);
        m
    }
}

struct Sim<'a> {
    rng: Rng,
    nodes: &'a mut [Listened],
    scripts: &'a Scripts,
    clients: Vec<Client>,
    queue: Queue<Ev>,
    quorum: usize,
    /// Count every grant heard on the channel, of any value or epoch (the blind check's run).
    any_grant: bool,
    wins: u64,
    by_grants: u64,
    step_backs: u64,
}

fn bit(i: usize) -> u16 {
    1 << i
}

impl Sim<'_> {
    fn send(&mut self, now: u64, client: usize, node: usize, cmd: Cmd, round: Option<u64>) {
        let at = (now + 1 + self.rng.below(8)).max(self.clients[client].out[node]);
        self.clients[client].out[node] = at;
        // Lost on the way: never runs, never answers.
        if self.rng.chance(3) {
            return;
        }
        self.queue.push(
            at,
            Ev::Deliver {
                client,
                node,
                cmd,
                round,
            },
        );
    }

    fn start_round(&mut self, now: u64, c: usize) {
        let cl = &mut self.clients[c];
        cl.round += 1;
        cl.state = State::Round;
        cl.yes = 0;
        cl.answered = 0;
        let (round, value, since, sweep) = (cl.round, cl.value(), cl.since, !cl.retired.is_empty());
        for node in 0..self.nodes.len() {
            let cmd = Cmd::TakeOver {
                value: value.clone(),
                since,
                sweep,
            };
            self.send(now, c, node, cmd, Some(round));
        }
        self.queue.push(now + 40, Ev::Timeout { client: c, round });
    }

    /// Runs a command on its node; schedules its reply and the grant messages it published.
    fn deliver(&mut self, now: u64, client: usize, node_at: usize, cmd: &Cmd, round: Option<u64>) {
        let s = self.scripts;
        let name = self.clients[client].name.to_string();
        let ttl = TTL_MS.to_string();
        // The wait's place and sweep flag, which a take-over and an unmark both carry.
        let (since, sweep): (String, &[u8]) = match cmd {
            Cmd::TakeOver { since, sweep, .. } | Cmd::Unmark { since, sweep, .. } => {
                (since.to_string(), if *sweep { b"1" } else { b"0" })
            }
            _ => (String::new(), b"0"),
        };
        let (name, since) = (name.as_bytes(), since.as_bytes());
        let node = &mut self.nodes[node_at];
        let (reply, published) = match cmd {
            Cmd::TakeOver { value, .. } => node.eval(
                s.take_over,
                &[KEY],
                &[value, ttl.as_bytes(), name, ttl.as_bytes(), since, sweep],
            ),
            Cmd::StepBack { value } => node.eval(s.step_back, &[KEY], &[value, b"0", name]),
            Cmd::Unmark { value, .. } => node.eval(
                s.unmark,
                &[KEY],
                &[value, name, ttl.as_bytes(), since, sweep],
            ),
            Cmd::Release { value } => node.eval(s.release, &[KEY], &[value]),
            Cmd::HandOff { value } => node.eval(s.release_handoff, &[KEY], &[value, RESERVE_MS]),
        };
        let node = node_at;
        for (channel, payload) in published {
            let Some(to) = self
                .clients
                .iter()
                .position(|c| channel.ends_with(format!(":h:{}", c.name).as_bytes()))
            else {
                continue;
            };
            let at = (now + 1 + self.rng.below(30)).max(self.clients[to].inbox[node]);
            self.clients[to].inbox[node] = at;
            self.queue.push(
                at,
                Ev::Grant {
                    client: to,
                    node,
                    message: payload,
                },
            );
        }
        if let Some(round) = round {
            if !self.rng.chance(3) {
                let yes = reply != "-1";
                let at = now + 1 + self.rng.below(8);
                self.queue.push(
                    at,
                    Ev::Reply {
                        client,
                        node,
                        round,
                        yes,
                    },
                );
            }
        }
    }

    /// The waiter `c` believes it holds the lock on `held`: it must hold its value on a majority.
    fn win(&mut self, now: u64, c: usize, held: u16) -> Result<(), String> {
        self.check(c, "won")?;
        self.wins += 1;
        let value = self.clients[c].value();
        let (since, retired) = (
            self.clients[c].since,
            std::mem::take(&mut self.clients[c].retired),
        );
        self.clients[c].state = State::Holding;
        let n = self.nodes.len();
        // As `LeaveOnDrop::won`: the entry out where it was not taken out; after a step back, all of
        // the wait's entries everywhere and its retired values where they do not count for the lock.
        for node in 0..n {
            let counts = held & bit(node) != 0;
            if !retired.is_empty() || !counts {
                let sweep = !retired.is_empty();
                let cmd = Cmd::Unmark {
                    value: value.clone(),
                    since,
                    sweep,
                };
                self.send(now, c, node, cmd, None);
            }
            if !counts {
                for r in &retired {
                    self.send(now, c, node, Cmd::Release { value: r.clone() }, None);
                }
            }
        }
        let hold = now + 5 + self.rng.below(30);
        self.queue.push(hold, Ev::Release(c));
        Ok(())
    }

    /// The holder `c` has its value on a majority of the nodes (`when`: for the report).
    fn check(&self, c: usize, when: &str) -> Result<(), String> {
        let value = self.clients[c].value();
        let holding: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].get(KEY).as_deref() == Some(&value[..]))
            .collect();
        if holding.len() >= self.quorum {
            return Ok(());
        }
        Err(format!(
            "waiter {c} {when} holding the lock, its value is on nodes {holding:?} only"
        ))
    }

    /// A round ended without a majority: step back where it said yes (then the next epoch), and
    /// pause; a grant heard meanwhile may win first.
    fn lose(&mut self, now: u64, c: usize) -> Result<(), String> {
        let yes = self.clients[c].yes;
        if yes != 0 {
            self.step_backs += 1;
            let value = self.clients[c].value();
            for node in 0..self.nodes.len() {
                if yes & bit(node) != 0 {
                    self.send(
                        now,
                        c,
                        node,
                        Cmd::StepBack {
                            value: value.clone(),
                        },
                        None,
                    );
                }
            }
            let cl = &mut self.clients[c];
            cl.retired.push(value);
            // As `TakeOver::stepped_back` (whose wait, after the last epoch, leaves take-over mode).
            cl.epoch = cl
                .epoch
                .checked_add(1)
                .expect("fewer than 256 steps back in a wait");
            if !self.any_grant {
                cl.heard = 0;
            }
        }
        self.clients[c].state = State::Pause;
        if self.heard_enough(c) {
            return self.win_by_grants(now, c);
        }
        let round = self.clients[c].round;
        let at = now + 10 + self.rng.below(30);
        self.queue.push(at, Ev::Retry { client: c, round });
        Ok(())
    }

    fn heard_enough(&self, c: usize) -> bool {
        self.clients[c].heard.count_ones() as usize >= self.quorum
    }

    fn win_by_grants(&mut self, now: u64, c: usize) -> Result<(), String> {
        self.by_grants += 1;
        let held = self.clients[c].heard;
        self.win(now, c, held)
    }

    fn step(&mut self, now: u64, ev: Ev) -> Result<(), String> {
        match ev {
            Ev::Start(c) => {
                let base = (0..24).map(|_| b'a' + self.rng.below(26) as u8).collect();
                let cl = &mut self.clients[c];
                cl.base = base;
                cl.epoch = 0;
                cl.since = now * 1000 + c as u64;
                cl.heard = 0;
                cl.retired.clear();
                self.start_round(now, c);
            }
            Ev::Deliver {
                client,
                node,
                cmd,
                round,
            } => self.deliver(now, client, node, &cmd, round),
            Ev::Reply {
                client: c,
                node,
                round,
                yes,
            } => {
                let cl = &mut self.clients[c];
                if cl.state != State::Round || cl.round != round {
                    return Ok(());
                }
                cl.answered |= bit(node);
                if yes {
                    cl.yes |= bit(node);
                }
                if cl.yes.count_ones() as usize >= self.quorum {
                    let held = cl.yes;
                    return self.win(now, c, held);
                }
                if cl.answered.count_ones() as usize == self.nodes.len() {
                    return self.lose(now, c);
                }
            }
            Ev::Timeout { client: c, round } => {
                let cl = &self.clients[c];
                if cl.state == State::Round && cl.round == round {
                    return self.lose(now, c);
                }
            }
            Ev::Grant {
                client: c,
                node,
                message,
            } => {
                let cl = &mut self.clients[c];
                let waiting = matches!(cl.state, State::Round | State::Pause);
                if waiting && (self.any_grant || message == cl.grant_message()) {
                    cl.heard |= bit(node);
                }
                // Between rounds, a wake-up: the grants heard may make the lock.
                if self.clients[c].state == State::Pause && self.heard_enough(c) {
                    return self.win_by_grants(now, c);
                }
            }
            Ev::Retry { client: c, round } => {
                let cl = &self.clients[c];
                if cl.state == State::Pause && cl.round == round {
                    self.start_round(now, c);
                }
            }
            Ev::Release(c) => {
                let value = self.clients[c].value();
                self.clients[c].state = State::Idle;
                for node in 0..self.nodes.len() {
                    self.send(
                        now,
                        c,
                        node,
                        Cmd::HandOff {
                            value: value.clone(),
                        },
                        None,
                    );
                }
                let at = now + self.rng.below(30);
                self.queue.push(at, Ev::Start(c));
            }
        }
        Ok(())
    }
}

/// One run: `clients` waiters on `nodes`, seeded; the first violation, if any, and the counts.
fn simulate(
    seed: u64,
    nodes: &mut [Listened],
    scripts: &Scripts,
    clients: usize,
    any_grant: bool,
) -> (Option<String>, u64, u64, u64) {
    for node in nodes.iter() {
        node.server.cmd(&[b"FLUSHALL"]);
    }
    let n = nodes.len();
    let mut sim = Sim {
        rng: Rng::seeded(seed),
        quorum: n / 2 + 1,
        nodes,
        scripts,
        clients: (0..clients)
            .map(|i| Client {
                name: 1000 + i as u64,
                base: Vec::new(),
                epoch: 0,
                since: 0,
                state: State::Idle,
                round: 0,
                yes: 0,
                answered: 0,
                heard: 0,
                retired: Vec::new(),
                out: vec![0; n],
                inbox: vec![0; n],
            })
            .collect(),
        queue: Queue::new(),
        any_grant,
        wins: 0,
        by_grants: 0,
        step_backs: 0,
    };
    for c in 0..clients {
        sim.queue.push(c as u64, Ev::Start(c));
    }
    while let Some((now, ev)) = sim.queue.pop_until(END) {
        if let Err(violation) = sim.step(now, ev) {
            return (
                Some(format!("seed {seed}, t={now}: {violation}")),
                sim.wins,
                sim.by_grants,
                sim.step_backs,
            );
        }
        for c in 0..clients {
            if sim.clients[c].state == State::Holding {
                if let Err(violation) = sim.check(c, "still") {
                    return (
                        Some(format!("seed {seed}, t={now}: {violation}")),
                        sim.wins,
                        sim.by_grants,
                        sim.step_backs,
                    );
                }
            }
        }
    }
    (None, sim.wins, sim.by_grants, sim.step_backs)
}

#[test]
fn a_waiter_that_believes_it_holds_the_lock_holds_it_on_a_majority() {
    let scripts = Scripts::find();
    for (n, clients, seeds) in [(3, 3, 0..12u64), (5, 4, 100..106)] {
        let mut nodes: Vec<Listened> = (0..n).map(|_| Listened::start(b"*:h:*")).collect();
        let (mut wins, mut by_grants, mut step_backs) = (0, 0, 0);
        for seed in seeds {
            let (violation, w, g, s) = simulate(seed, &mut nodes, &scripts, clients, false);
            assert_eq!(violation, None, "{n} nodes, {clients} waiters");
            (wins, by_grants, step_backs) = (wins + w, by_grants + g, step_backs + s);
        }
        eprintln!("{n} nodes, {clients} waiters: {wins} wins, {by_grants} by grants, {step_backs} steps back");
        // The runs must exercise the hand-off: grants counted, and steps back (the race's half).
        assert!(
            wins > 100 && by_grants > 20 && step_backs > 20,
            "{n} nodes: {wins} wins, {by_grants} by grants, {step_backs} steps back"
        );
    }
}

#[test]
fn counting_grants_of_earlier_epochs_is_caught() {
    let scripts = Scripts::find();
    let mut nodes: Vec<Listened> = (0..3).map(|_| Listened::start(b"*:h:*")).collect();
    let caught = (0..20u64)
        .filter_map(|seed| simulate(seed, &mut nodes, &scripts, 3, true).0)
        .count();
    eprintln!("counting every grant: {caught} of 20 runs caught");
    assert!(
        caught > 0,
        "no run caught a waiter counting a grant its step back deleted"
    );
}
