//! The fencing model's clients and network: acquire, commit, hold and release under random message
//! delay and loss and client pauses, on the shared simulation core.

use super::node::{node_step, Answer, Guards, Msg, Node, DRIFT, TIMEOUT, TTL};
use crate::model::sim::{Queue, Rng};

pub enum EventKind {
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

#[derive(Clone, Copy, PartialEq)]
pub enum Phase {
    Idle,
    Acquiring { start: u64 },
    Committing { valid_until: u64, token: u64 },
}

pub struct Client {
    pub phase: Phase,
    pub round: u64,
    pub value: u64,
    pub yes: usize,
    pub no: usize,
    pub max_counter: u64,
    pub conflicts: usize,
    pub commits: usize,
}

pub struct Grant {
    pub token: u64,
    pub committed_at: u64,
}

pub struct Sim {
    pub rng: Rng,
    pub guards: Guards,
    pub nodes: Vec<Node>,
    pub clients: Vec<Client>,
    pub events: Queue<EventKind>,
    pub now: u64,
    pub grants: Vec<Grant>,
    pub next_value: u64,
}

impl Sim {
    pub fn push(&mut self, at: u64, kind: EventKind) {
        self.events.push(at, kind);
    }

    /// Sends `msg` to every node now (see [`Self::broadcast_at`]).
    pub fn broadcast(&mut self, client: usize, round: u64, make: impl Fn() -> Msg) {
        self.broadcast_at(self.now, client, round, make);
    }

    /// Sends `msg` to every node at `at`; each copy may be lost or delayed (up to a whole TTL: a
    /// paused or slow network), and so may its answer.
    pub fn broadcast_at(&mut self, at: u64, client: usize, round: u64, make: impl Fn() -> Msg) {
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
                at + delay,
                EventKind::AtNode {
                    node,
                    client,
                    round,
                    msg: make(),
                },
            );
        }
    }

    pub fn start_acquire(&mut self, c: usize) {
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

    pub fn start_commit(&mut self, c: usize, valid_until: u64, floor: u64) {
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
        self.broadcast_at(at, c, round, || Msg::Commit { value, token });
        self.push(
            (at + TIMEOUT).min(valid_until.max(self.now)),
            EventKind::Wake { client: c, round },
        );
    }

    pub fn at_node(&mut self, n: usize, client: usize, round: u64, msg: Msg) {
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

    pub fn at_client(&mut self, c: usize, round: u64, answer: Answer) {
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

    pub fn wake(&mut self, c: usize, round: u64) {
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

    pub fn start_acquire_later(&mut self, c: usize) {
        let cl = &mut self.clients[c];
        cl.phase = Phase::Idle;
        cl.round += 1;
        cl.value = 0;
        let round = cl.round;
        let pause = self.rng.below(30);
        // value 0 marks "idle, acquire at wake"
        self.push(self.now + pause, EventKind::Wake { client: c, round });
    }

    pub fn run(&mut self, until: u64) {
        for c in 0..self.clients.len() {
            self.start_acquire(c);
        }
        while let Some((at, kind)) = self.events.pop_until(until) {
            self.now = at;
            match kind {
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
    pub fn violation(&self) -> Option<(u64, u64)> {
        let mut grants: Vec<&Grant> = self.grants.iter().collect();
        grants.sort_by_key(|g| g.committed_at);
        grants
            .windows(2)
            .find(|w| w[1].token <= w[0].token)
            .map(|w| (w[0].token, w[1].token))
    }
}

pub fn simulate(
    seed: u64,
    nodes: usize,
    clients: usize,
    guards: Guards,
) -> (usize, Option<(u64, u64)>) {
    let mut sim = Sim {
        rng: Rng::seeded(seed),
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
        events: Queue::new(),
        now: 0,
        grants: Vec::new(),
        next_value: 0,
    };
    sim.run(4_000);
    (sim.grants.len(), sim.violation())
}
