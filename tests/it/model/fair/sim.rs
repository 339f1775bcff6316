//! The fair model's world: nodes, waiters and the network between them (loss, delay, FIFO per
//! connection), and the loop that delivers events in time order on the shared simulation core.

use std::collections::HashMap;

use super::node::{Answer, Msg, Node, Rules, END, FAULTS_END, TTL};
use crate::model::sim::{Queue, Rng};

pub enum Ev {
    AtNode {
        node: usize,
        client: usize,
        round: u64,
        msg: Msg,
    },
    AtClient {
        client: usize,
        round: u64,
        node: usize,
        answer: Answer,
    },
    Timer {
        client: usize,
        round: u64,
    },
    /// A wake-up naming the waiter with this value (the scripts publish a digest of it).
    Notify {
        value: u64,
    },
    /// A release's grant by message: the key on `node` set to `value`'s, for its `epoch`.
    Grant {
        value: u64,
        node: usize,
        epoch: u64,
    },
    /// A node's answer to a release-to, for the releaser's claim.
    AtClaim {
        claim: usize,
        granted: bool,
    },
    /// The releaser's deadline for a claim's answers.
    ClaimTimer {
        claim: usize,
    },
    /// A claim's answer, delivered to its waiter.
    Handed {
        client: usize,
        answer: Handed,
    },
}

/// What a release's claim on a waiter came to (`engine::successors::Handed`).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Handed {
    Lock { valid_until: u64 },
    TryNow,
    Stay,
}

/// A release's claim on a parked waiter of its process.
pub struct Claim {
    pub waiter: usize,
    pub start: u64,
    pub answered: usize,
    pub granted: usize,
    pub done: bool,
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Phase {
    Idle,
    Enqueue,
    Waiting,
    Attempt,
    Holding,
    /// Named by a release of its process whose answers are not in: starts no round of its own.
    Claimed,
    Dead,
}

pub struct Client {
    pub phase: Phase,
    pub round: u64,
    pub value: u64,
    pub round_start: u64,
    pub yes: usize,
    pub queued: usize,
    pub missing: usize,
    pub answered: usize,
    /// This round's answers by node: who granted, who answered (G, Q or L), who held the entry (G
    /// or Q), and the tickets an enqueue's nodes gave.
    pub granted_mask: u16,
    pub answered_mask: u16,
    pub queued_nodes: Vec<usize>,
    pub tickets: Vec<(usize, u64)>,
    pub paused_until: u64,
    /// The current place (index into `places`), its ticket, and whether its enqueue completed.
    pub place: Option<usize>,
    pub ticket: u64,
    pub complete: bool,
    pub notified: bool,
    /// How far this waiter's clock is off (its enqueues' hints).
    pub skew: i64,
    /// Its current epoch (a grant by message counts only for it), when the round that set it
    /// began, and the nodes heard granting it.
    pub epoch: u64,
    pub epoch_start: u64,
    pub heard: u16,
    /// The nodes the last round's unlock went to (their epoch is the round's plus one).
    pub unlocked: u16,
}

/// One enqueue: when it began (its ticket round) and completed, on which nodes, when it lost its
/// place there, when it was granted.
pub struct Place {
    pub value: u64,
    pub began: u64,
    pub completed: Option<u64>,
    pub majority: Vec<usize>,
    pub lost_at: Option<u64>,
    pub granted: Option<u64>,
}

pub struct Sim {
    pub rng: Rng,
    pub rules: Rules,
    pub nodes: Vec<Node>,
    pub clients: Vec<Client>,
    pub places: Vec<Place>,
    pub events: Queue<Ev>,
    /// Per (client, node): the last delivery time, so each connection stays FIFO.
    pub channel: HashMap<(usize, usize), u64>,
    pub now: u64,
    pub next_value: u64,
    /// (grant, valid_until, released) of every grant, for mutual exclusion.
    pub holds: Vec<(u64, u64, u64, usize)>,
    pub overtakes_excused: usize,
    /// Head wake-ups sent (not lost), to show the runs use them.
    pub wakes: usize,
    /// Enqueue and attempt rounds started.
    pub rounds: usize,
    /// Waiters per process (`c / per_process`): a release names its process's next waiter.
    pub per_process: usize,
    pub claims: Vec<Claim>,
    /// Locks a release handed to its process's next waiter.
    pub handed: usize,
    /// Locks granted by releases' messages, counted by their waiter.
    pub by_message: usize,
    pub next_epoch: u64,
}

impl Sim {
    pub fn new(seed: u64, n: usize, clients: usize, rules: Rules) -> Self {
        let mut sim = Sim {
            rng: Rng::seeded(seed),
            rules,
            nodes: (0..n).map(|_| Node::default()).collect(),
            clients: (0..clients)
                .map(|_| Client {
                    phase: Phase::Idle,
                    round: 0,
                    value: 0,
                    round_start: 0,
                    yes: 0,
                    queued: 0,
                    missing: 0,
                    answered: 0,
                    granted_mask: 0,
                    answered_mask: 0,
                    queued_nodes: Vec::new(),
                    tickets: Vec::new(),
                    paused_until: 0,
                    place: None,
                    ticket: 0,
                    complete: false,
                    notified: false,
                    skew: 0,
                    epoch: 0,
                    epoch_start: 0,
                    heard: 0,
                    unlocked: 0,
                })
                .collect(),
            places: Vec::new(),
            events: Queue::new(),
            channel: HashMap::new(),
            now: 0,
            next_value: 0,
            holds: Vec::new(),
            overtakes_excused: 0,
            wakes: 0,
            rounds: 0,
            per_process: 3,
            claims: Vec::new(),
            handed: 0,
            by_message: 0,
            next_epoch: 0,
        };
        for c in 0..clients {
            // Clocks off by up to a TTL either way, or (a third of the waiters) so far behind that
            // their hints never count.
            sim.clients[c].skew = if sim.rng.chance(33) {
                -(END as i64)
            } else {
                sim.rng.below(2 * TTL) as i64 - TTL as i64
            };
            let at = sim.rng.below(TTL);
            sim.push(
                at,
                Ev::Timer {
                    client: c,
                    round: 0,
                },
            );
        }
        sim
    }

    pub fn faults(&self) -> bool {
        self.now < FAULTS_END
    }

    pub fn push(&mut self, at: u64, ev: Ev) {
        self.events.push(at, ev);
    }

    pub fn quorum(&self) -> usize {
        self.nodes.len() / 2 + 1
    }

    /// Queues `msg` to every node on the client's connections: sometimes lost, usually fast,
    /// sometimes slow (up to a TTL), never overtaking an earlier message on the same connection.
    pub fn broadcast(&mut self, c: usize, msg: Msg) {
        self.send(c, msg, u16::MAX);
    }

    /// [`Self::broadcast`] to the nodes in `mask` (a bit per node).
    pub fn send(&mut self, c: usize, msg: Msg, mask: u16) {
        let round = self.clients[c].round;
        for node in 0..self.nodes.len() {
            if mask & (1 << node) == 0 {
                continue;
            }
            if self.faults() && self.rng.chance(8) {
                continue;
            }
            let delay = if self.faults() && self.rng.chance(5) {
                self.rng.below(TTL)
            } else {
                1 + self.rng.below(3)
            };
            let last = self.channel.get(&(c, node)).copied().unwrap_or(0);
            let at = (self.now + delay).max(last);
            self.channel.insert((c, node), at);
            self.push(
                at,
                Ev::AtNode {
                    node,
                    client: c,
                    round,
                    msg,
                },
            );
        }
    }

    pub fn lose_place(&mut self, node: usize, value: u64) {
        let now = self.now;
        for p in self
            .places
            .iter_mut()
            .filter(|p| p.value == value && p.lost_at.is_none())
        {
            if p.completed.is_some() && p.majority.contains(&node) {
                p.lost_at = Some(now);
            }
        }
    }

    pub fn at_node(&mut self, n: usize, c: usize, round: u64, msg: Msg) {
        let now = self.now;
        // A release-to travels on its waiter's connection (one engine: one connection per node)
        // and carries its holder's value.
        let value = match msg {
            Msg::ReleaseTo { holder, .. } => holder,
            _ => self.clients[c].value,
        };
        self.nodes[n].expire(now);
        let step = self.nodes[n].step(now, value, msg, self.rules);
        // Dead entries go when a waiter's round finds them at the head.
        for &w in &step.gone {
            self.lose_place(n, w);
        }
        if step.lost_place {
            self.lose_place(n, value);
        }
        if let Some((value, epoch)) = step.grant {
            // Like a wake-up: sometimes lost, and now and then late (past the waiter's next epoch).
            if !(self.faults() && self.rng.chance(10)) {
                let late = self.faults() && self.rng.chance(5);
                let at = now + 1 + self.rng.below(if late { TTL } else { 3 });
                self.push(
                    at,
                    Ev::Grant {
                        value,
                        node: n,
                        epoch,
                    },
                );
            }
        }
        let (answer, publish) = (step.answer, step.publish);
        // Only the head is woken (if the message is not lost); the others wait out their pause.
        if let Some(head) = self.nodes[n].head().filter(|_| publish) {
            if !(self.faults() && self.rng.chance(10)) {
                let at = now + 1 + self.rng.below(3);
                self.push(at, Ev::Notify { value: head });
                self.wakes += 1;
            }
        }
        if let (Some(Answer::Released { granted }), Msg::ReleaseTo { claim, .. }) = (answer, msg) {
            if !(self.faults() && self.rng.chance(8)) {
                let at = now + 1 + self.rng.below(3);
                self.push(at, Ev::AtClaim { claim, granted });
            }
        } else if let Some(answer) = answer {
            if !(self.faults() && self.rng.chance(8)) {
                let at = now + 1 + self.rng.below(3);
                self.push(
                    at,
                    Ev::AtClient {
                        client: c,
                        round,
                        node: n,
                        answer,
                    },
                );
            }
        }
    }

    pub fn run(&mut self) {
        while let Some((at, ev)) = self.events.pop_until(END) {
            self.now = at;
            match ev {
                Ev::AtNode {
                    node,
                    client,
                    round,
                    msg,
                } => self.at_node(node, client, round, msg),
                Ev::AtClient {
                    client,
                    round,
                    node,
                    answer,
                } => {
                    if !self.deferred(
                        client,
                        Ev::AtClient {
                            client,
                            round,
                            node,
                            answer,
                        },
                    ) {
                        self.at_client(client, round, node, answer)
                    }
                }
                Ev::Timer { client, round } => {
                    if !self.deferred(client, Ev::Timer { client, round }) {
                        self.timer(client, round)
                    }
                }
                Ev::Notify { value } => {
                    // The waiter that value belongs to, if it still waits with it (a finished
                    // acquire has unsubscribed: its name wakes nobody).
                    let Some(client) = self.clients.iter().position(|cl| {
                        cl.value == value && !matches!(cl.phase, Phase::Idle | Phase::Holding)
                    }) else {
                        continue;
                    };
                    let cl = &mut self.clients[client];
                    match cl.phase {
                        Phase::Waiting => {
                            let round = cl.round;
                            self.start_round_if(client, round);
                        }
                        Phase::Attempt | Phase::Enqueue | Phase::Claimed => cl.notified = true,
                        _ => {}
                    }
                }
                Ev::Grant { value, node, epoch } => {
                    let Some(client) = self.clients.iter().position(|cl| {
                        cl.value == value && !matches!(cl.phase, Phase::Idle | Phase::Holding)
                    }) else {
                        continue;
                    };
                    if !self.deferred(client, Ev::Grant { value, node, epoch }) {
                        self.grant_heard(client, node, epoch)
                    }
                }
                Ev::AtClaim { claim, granted } => self.at_claim(claim, Some(granted)),
                Ev::ClaimTimer { claim } => self.at_claim(claim, None),
                Ev::Handed { client, answer } => {
                    if !self.deferred(client, Ev::Handed { client, answer }) {
                        self.handed(client, answer)
                    }
                }
            }
        }
        self.now = END;
    }
}
