//! A deterministic simulation of the fair lock's protocol (see `src/kinds/fair.rs`): nodes with a lock
//! key and a queue of `(ticket, waiter)` entries that expire, waiters that take a ticket, enqueue,
//! attempt, hold and release, with message delay and loss (FIFO per waiter and node, as on one
//! connection), release notifications, waiter pauses and deaths, on 3 and 5 nodes.
//!
//! Notifications are head-only, as in the scripts: a node that leaves the key free with a non-empty
//! queue (release, leave, a round's unlock, or an enqueue or attempt that cannot take a free key)
//! wakes only the waiter at the head of its live queue, and wake-ups are lost too. Every other
//! waiter moves on at its own pause: the drain check below is what says that is enough.
//!
//! Checked on every run:
//! - **arrival order**: if A's enqueue completed before B's began, B is not granted before A — unless
//!   A lost its place first (an entry of A's on a node of its enqueue majority expired or was removed:
//!   A died, paused past a TTL, gave up or re-enqueued);
//! - **mutual exclusion** while valid;
//! - **the queue drains**: once faults stop, every live waiter is granted, and every queue and lock
//!   key on every node is empty at the end.
//!
//! A second run breaks the grant rule (nodes grant to any queued waiter, not the head) to show the
//! order check is not blind.

use std::collections::{BTreeMap, BinaryHeap, HashMap};

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
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const TTL: u64 = 100;
const TIMEOUT: u64 = 10;
const DRIFT: u64 = 2;
/// Faults (loss, long delays, pauses, deaths) and new acquires stop here; the rest drains.
const FAULTS_END: u64 = 60 * TTL;
const END: u64 = FAULTS_END + 40 * TTL;

#[derive(Default)]
struct Node {
    lock: Option<(u64, u64)>,
    /// waiter -> (ticket, expires_at)
    queue: BTreeMap<u64, (u64, u64)>,
}

impl Node {
    /// Drops expired entries and an expired key; returns the waiters whose entries went.
    fn prune(&mut self, now: u64) -> Vec<u64> {
        if self.lock.is_some_and(|(_, exp)| exp <= now) {
            self.lock = None;
        }
        let gone: Vec<u64> = self
            .queue
            .iter()
            .filter(|(_, &(_, exp))| exp <= now)
            .map(|(&w, _)| w)
            .collect();
        for w in &gone {
            self.queue.remove(w);
        }
        gone
    }
    fn head(&self) -> Option<u64> {
        self.queue
            .iter()
            .min_by_key(|(&w, &(t, _))| (t, w))
            .map(|(&w, _)| w)
    }
}

#[derive(Clone, Copy, Debug)]
enum Msg {
    Ticket,
    Enqueue { ticket: u64 },
    Attempt { ticket: u64 },
    Unlock,
    Leave,
    Release,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Answer {
    Max(u64),
    Granted,
    Queued,
    Missing,
}

enum Ev {
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
}

struct Event {
    at: u64,
    seq: u64,
    ev: Ev,
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
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Phase {
    Idle,
    Ticket,
    Enqueue,
    Waiting,
    Attempt,
    Holding,
    Dead,
}

struct Client {
    phase: Phase,
    round: u64,
    value: u64,
    round_start: u64,
    yes: usize,
    queued: usize,
    missing: usize,
    answered: usize,
    max: u64,
    yes_nodes: Vec<usize>,
    paused_until: u64,
    /// The current place (index into `places`) and its ticket.
    place: Option<usize>,
    ticket: u64,
    notified: bool,
}

/// One enqueue: when it began (its ticket round) and completed, on which nodes, when it lost its
/// place there, when it was granted.
struct Place {
    value: u64,
    began: u64,
    completed: Option<u64>,
    majority: Vec<usize>,
    lost_at: Option<u64>,
    granted: Option<u64>,
}

struct Sim {
    rng: Rng,
    head_rule: bool,
    nodes: Vec<Node>,
    clients: Vec<Client>,
    places: Vec<Place>,
    events: BinaryHeap<Event>,
    /// Per (client, node): the last delivery time, so each connection stays FIFO.
    channel: HashMap<(usize, usize), u64>,
    seq: u64,
    now: u64,
    next_value: u64,
    /// (grant, valid_until, released) of every grant, for mutual exclusion.
    holds: Vec<(u64, u64, u64, usize)>,
    overtakes_excused: usize,
    /// Head wake-ups sent (not lost), to show the runs use them.
    wakes: usize,
    /// Enqueue and attempt rounds started.
    rounds: usize,
}

impl Sim {
    fn new(seed: u64, n: usize, clients: usize, head_rule: bool) -> Self {
        let mut sim = Sim {
            rng: Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            head_rule,
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
                    max: 0,
                    yes_nodes: Vec::new(),
                    paused_until: 0,
                    place: None,
                    ticket: 0,
                    notified: false,
                })
                .collect(),
            places: Vec::new(),
            events: BinaryHeap::new(),
            channel: HashMap::new(),
            seq: 0,
            now: 0,
            next_value: 0,
            holds: Vec::new(),
            overtakes_excused: 0,
            wakes: 0,
            rounds: 0,
        };
        for c in 0..clients {
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

    fn faults(&self) -> bool {
        self.now < FAULTS_END
    }

    fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Event {
            at,
            seq: self.seq,
            ev,
        });
    }

    fn quorum(&self) -> usize {
        self.nodes.len() / 2 + 1
    }

    /// Queues `msg` to every node on the client's connections: sometimes lost, usually fast,
    /// sometimes slow (up to a TTL), never overtaking an earlier message on the same connection.
    fn broadcast(&mut self, c: usize, msg: Msg) {
        let round = self.clients[c].round;
        for node in 0..self.nodes.len() {
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

    fn start_round(&mut self, c: usize, phase: Phase, msg: Msg) {
        let now = self.now;
        let cl = &mut self.clients[c];
        cl.round += 1;
        cl.phase = phase;
        cl.round_start = now;
        (cl.yes, cl.queued, cl.missing, cl.answered, cl.max) = (0, 0, 0, 0, 0);
        cl.yes_nodes.clear();
        cl.notified = false;
        let round = cl.round;
        if matches!(phase, Phase::Enqueue | Phase::Attempt) {
            self.rounds += 1;
        }
        self.broadcast(c, msg);
        self.push(now + TIMEOUT, Ev::Timer { client: c, round });
    }

    fn start_acquire(&mut self, c: usize) {
        if self.clients[c].phase == Phase::Idle {
            self.next_value += 1;
            self.clients[c].value = self.next_value;
        }
        let value = self.clients[c].value;
        self.places.push(Place {
            value,
            began: self.now,
            completed: None,
            majority: Vec::new(),
            lost_at: None,
            granted: None,
        });
        self.clients[c].place = Some(self.places.len() - 1);
        self.start_round(c, Phase::Ticket, Msg::Ticket);
    }

    fn lose_place(&mut self, node: usize, value: u64) {
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

    fn at_node(&mut self, n: usize, c: usize, round: u64, msg: Msg) {
        let now = self.now;
        let value = self.clients[c].value;
        for w in self.nodes[n].prune(now) {
            self.lose_place(n, w);
        }
        let node = &mut self.nodes[n];
        // The grant rule: the key free (or already ours) and we are the head. A key of ours while we
        // are not the head (a release of an earlier round that did not land) is dropped: it must
        // not grant us out of turn, nor keep the head waiting.
        let grant = |node: &mut Node, head_rule: bool| {
            let ours = node.lock.is_some_and(|(v, _)| v == value);
            let head_ok = if head_rule {
                node.head() == Some(value)
            } else {
                node.queue.contains_key(&value)
            };
            if (ours || node.lock.is_none()) && head_ok {
                node.lock = Some((value, now + TTL));
                Answer::Granted
            } else {
                if ours {
                    node.lock = None;
                }
                Answer::Queued
            }
        };
        // Whether this node wakes its head: the key is left free and someone else may take it.
        let mut publish = false;
        let mut stale = false;
        let answer = match msg {
            Msg::Ticket => Some(Answer::Max(
                node.queue.values().map(|&(t, _)| t).max().unwrap_or(0),
            )),
            Msg::Enqueue { ticket } => {
                // The new ticket replaces any stale entry of ours (a lost leave of an earlier place
                // would otherwise keep its older, lower ticket: the model found that trace).
                node.queue.insert(value, (ticket, now + TTL));
                let answer = grant(node, self.head_rule);
                publish = answer == Answer::Queued && node.lock.is_none();
                Some(answer)
            }
            // Only the current place's entry counts: an entry of an earlier place of ours (its
            // leave and our new enqueue both lost there) would rank us by a stale, lower ticket —
            // the model found that trace. It is dropped, and the node says we are missing.
            Msg::Attempt { ticket } => match node.queue.get_mut(&value) {
                Some(entry) if entry.0 == ticket => {
                    entry.1 = now + TTL;
                    let answer = grant(node, self.head_rule);
                    publish = answer == Answer::Queued && node.lock.is_none();
                    Some(answer)
                }
                Some(_) => {
                    node.queue.remove(&value);
                    stale = true;
                    publish = node.lock.is_none();
                    Some(Answer::Missing)
                }
                None => Some(Answer::Missing),
            },
            Msg::Unlock => {
                if node.lock.is_some_and(|(v, _)| v == value) {
                    node.lock = None;
                    // Where we are the head nobody else can be granted: no wake.
                    publish = node.head() != Some(value);
                }
                None
            }
            Msg::Leave | Msg::Release => {
                let had = node.queue.remove(&value).is_some();
                if node.lock.is_some_and(|(v, _)| v == value) {
                    node.lock = None;
                }
                publish = node.lock.is_none();
                if had {
                    self.lose_place(n, value);
                }
                None
            }
        };
        if stale {
            self.lose_place(n, value);
        }
        // Only the head is woken (if the message is not lost); the others wait out their pause.
        if let Some(head) = self.nodes[n].head().filter(|_| publish) {
            if !(self.faults() && self.rng.chance(10)) {
                let at = now + 1 + self.rng.below(3);
                self.push(at, Ev::Notify { value: head });
                self.wakes += 1;
            }
        }
        if let Some(answer) = answer {
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

    /// Whether the client is paused or dead now; a paused client's event runs when it resumes.
    fn deferred(&mut self, c: usize, ev: Ev) -> bool {
        let cl = &self.clients[c];
        if cl.phase == Phase::Dead {
            return true;
        }
        if cl.paused_until > self.now {
            let at = cl.paused_until;
            self.push(at, ev);
            return true;
        }
        if self.faults() {
            // Per mille: a client handles hundreds of events per run.
            if self.rng.below(1000) < 1 {
                self.clients[c].phase = Phase::Dead;
                return true;
            }
            if self.rng.below(1000) < 4 {
                let pause = self.rng.below(2 * TTL);
                self.clients[c].paused_until = self.now + pause;
                self.push(self.now + pause, ev);
                return true;
            }
        }
        false
    }

    fn at_client(&mut self, c: usize, round: u64, node: usize, answer: Answer) {
        if self.clients[c].round != round {
            return; // a late answer of an earlier round never counts
        }
        let q = self.quorum();
        let cl = &mut self.clients[c];
        cl.answered += 1;
        match answer {
            Answer::Max(t) => {
                cl.yes += 1;
                cl.max = cl.max.max(t);
            }
            Answer::Granted => {
                cl.yes += 1;
                cl.queued += 1;
                cl.yes_nodes.push(node);
            }
            Answer::Queued => {
                cl.queued += 1;
                cl.yes_nodes.push(node);
            }
            Answer::Missing => cl.missing += 1,
        }
        let all = cl.answered == self.nodes.len();
        match cl.phase {
            // Like the engine: the first majority of answers decides the ticket.
            Phase::Ticket if all || cl.yes >= q => self.end_round(c),
            Phase::Enqueue if all => self.end_round(c),
            Phase::Enqueue | Phase::Attempt if cl.yes >= q => self.end_round(c),
            Phase::Attempt if all => self.end_round(c),
            _ => {}
        }
        let _ = q;
    }

    /// A round decided (majority won, every answer in, or its timer).
    fn end_round(&mut self, c: usize) {
        let q = self.quorum();
        let now = self.now;
        let n = self.nodes.len();
        let cl = &mut self.clients[c];
        let phase = cl.phase;
        cl.round += 1; // later answers of this round are stale
        match phase {
            Phase::Ticket => {
                if cl.yes >= q {
                    let ticket = cl.max + 1;
                    cl.ticket = ticket;
                    self.start_round(c, Phase::Enqueue, Msg::Enqueue { ticket });
                } else {
                    self.start_acquire(c);
                }
            }
            Phase::Enqueue | Phase::Attempt => {
                if phase == Phase::Enqueue {
                    if cl.queued >= q {
                        let p = cl.place.unwrap();
                        let majority = cl.yes_nodes.clone();
                        let value = cl.value;
                        let lost = majority
                            .iter()
                            .any(|&x| !self.nodes[x].queue.contains_key(&value));
                        let place = &mut self.places[p];
                        place.completed = Some(now);
                        place.majority = majority;
                        if lost {
                            place.lost_at = Some(now);
                        }
                    } else {
                        return self.requeue(c);
                    }
                }
                let cl = &mut self.clients[c];
                let valid_until = cl.round_start + TTL - DRIFT;
                if cl.yes >= q && now + TTL / 10 <= valid_until {
                    self.granted(c, valid_until);
                } else {
                    // Keys of ours from this round go; the place stays.
                    let missing = cl.missing;
                    self.broadcast(c, Msg::Unlock);
                    if phase == Phase::Attempt && missing > n - q {
                        return self.requeue(c);
                    }
                    self.wait(c);
                }
            }
            _ => {}
        }
    }

    fn requeue(&mut self, c: usize) {
        self.broadcast(c, Msg::Leave);
        self.start_acquire(c);
    }

    fn wait(&mut self, c: usize) {
        let cl = &mut self.clients[c];
        cl.phase = Phase::Waiting;
        let round = cl.round;
        if cl.notified {
            cl.notified = false;
            self.push(self.now, Ev::Timer { client: c, round });
        } else {
            let pause = 10 + self.rng.below(15);
            self.push(self.now + pause, Ev::Timer { client: c, round });
        }
    }

    fn granted(&mut self, c: usize, valid_until: u64) {
        let now = self.now;
        let p = self.clients[c].place.unwrap();
        self.places[p].granted = Some(now);
        let hold = self.rng.below((valid_until - now).min(30));
        self.holds.push((now, valid_until, now + hold, c));
        let cl = &mut self.clients[c];
        cl.phase = Phase::Holding;
        cl.round += 1;
        let round = cl.round;
        self.push(now + hold, Ev::Timer { client: c, round });
    }

    fn timer(&mut self, c: usize, round: u64) {
        if self.clients[c].round != round {
            return;
        }
        match self.clients[c].phase {
            Phase::Idle => {
                if self.now < FAULTS_END {
                    self.start_acquire(c)
                }
            }
            Phase::Ticket | Phase::Enqueue | Phase::Attempt => self.end_round(c),
            Phase::Waiting => {
                let ticket = self.clients[c].ticket;
                self.start_round(c, Phase::Attempt, Msg::Attempt { ticket })
            }
            Phase::Holding => {
                // The hold ends at the timer; the release may be cut short by the validity.
                if let Some(h) = self.holds.iter_mut().rev().find(|h| h.3 == c) {
                    h.2 = h.2.min(self.now);
                }
                self.broadcast(c, Msg::Release);
                let cl = &mut self.clients[c];
                cl.phase = Phase::Idle;
                cl.place = None;
                cl.round += 1;
                let round = cl.round;
                let next = self.now + self.rng.below(TTL);
                self.push(next, Ev::Timer { client: c, round });
            }
            Phase::Dead => {}
        }
    }

    fn run(&mut self) {
        while let Some(Event { at, ev, .. }) = self.events.pop() {
            if at > END {
                break;
            }
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
                        Phase::Attempt | Phase::Enqueue => cl.notified = true,
                        _ => {}
                    }
                }
            }
        }
        self.now = END;
    }

    fn start_round_if(&mut self, c: usize, round: u64) {
        if self.clients[c].round == round && self.clients[c].paused_until <= self.now {
            let ticket = self.clients[c].ticket;
            self.start_round(c, Phase::Attempt, Msg::Attempt { ticket });
        }
    }

    /// Every order violation: (earlier place, later place, when the later one was granted).
    fn order_violations(&mut self) -> Vec<(usize, usize, u64)> {
        let mut bad = Vec::new();
        for (b, pb) in self.places.iter().enumerate() {
            let Some(gb) = pb.granted else { continue };
            for (a, pa) in self.places.iter().enumerate() {
                let Some(ca) = pa.completed else { continue };
                if a == b || pa.value == pb.value || ca >= pb.began {
                    continue;
                }
                if pa.granted.is_some_and(|ga| ga <= gb) {
                    continue;
                }
                if pa.lost_at.is_some_and(|l| l <= gb) {
                    self.overtakes_excused += 1;
                    continue;
                }
                bad.push((a, b, gb));
            }
        }
        bad
    }

    fn overlaps(&self) -> usize {
        let mut n = 0;
        for (i, a) in self.holds.iter().enumerate() {
            for b in &self.holds[i + 1..] {
                let (a_end, b_end) = (a.1.min(a.2), b.1.min(b.2));
                if a.0 < b_end && b.0 < a_end {
                    n += 1;
                }
            }
        }
        n
    }
}

#[test]
fn arrival_order_mutual_exclusion_and_drain_on_3_and_5_nodes() {
    let mut grants = 0;
    let mut excused = 0;
    let mut checked_pairs = 0;
    let (mut wakes, mut rounds) = (0, 0);
    for n in [3, 5] {
        // SEEDS=n runs more; SEED=<nodes>:<seed> runs one (to trace a failure).
        let seeds = std::env::var("SEEDS").map_or(150, |s| s.parse().unwrap());
        for seed in 0..seeds {
            if std::env::var("SEED").is_ok_and(|s| s != format!("{n}:{seed}")) {
                continue;
            }
            let mut sim = Sim::new(seed, n, 6, true);
            sim.run();
            let bad = sim.order_violations();
            if let Some(&(a, b, _)) = bad.first() {
                let show = |p: &Place| {
                    format!(
                        "value {} began {} completed {:?} on {:?} lost {:?} granted {:?}",
                        p.value, p.began, p.completed, p.majority, p.lost_at, p.granted
                    )
                };
                panic!(
                    "N={n} seed={seed}: overtaken: {bad:?}\nA: {}\nB: {}",
                    show(&sim.places[a]),
                    show(&sim.places[b])
                );
            }
            assert_eq!(sim.overlaps(), 0, "N={n} seed={seed}: two valid holders");
            // Drained: every live client finished, every node empty.
            for (c, cl) in sim.clients.iter().enumerate() {
                assert!(
                    matches!(cl.phase, Phase::Idle | Phase::Dead),
                    "N={n} seed={seed}: client {c} still {:?} long after the faults stopped",
                    cl.phase
                );
            }
            let end = sim.now;
            for (i, node) in sim.nodes.iter_mut().enumerate() {
                node.prune(end);
                assert!(
                    node.queue.is_empty() && node.lock.is_none(),
                    "N={n} seed={seed}: node {i} not drained"
                );
            }
            grants += sim.holds.len();
            excused += sim.overtakes_excused;
            wakes += sim.wakes;
            rounds += sim.rounds;
            checked_pairs += sim.places.iter().filter(|p| p.completed.is_some()).count();
        }
    }
    eprintln!("{grants} grants, {checked_pairs} completed enqueues, {excused} overtakes of waiters that had lost their place, {wakes} head wake-ups, {:.2} rounds per grant", rounds as f64 / grants as f64);
    assert!(wakes > grants / 2, "head wake-ups are modelled: {wakes}");
    // The runs are not trivial: many grants, and places really lost to faults (then overtaken).
    assert!(grants > 10_000, "{grants} grants");
    assert!(
        excused > 0,
        "no place was ever lost: the faults are too weak"
    );
    assert!(checked_pairs > 10_000);
}

#[test]
fn without_the_head_rule_waiters_are_overtaken() {
    let mut violations = 0;
    for seed in 0..40 {
        let mut sim = Sim::new(seed, 3, 6, false);
        sim.run();
        violations += sim.order_violations().len();
        assert_eq!(sim.overlaps(), 0, "the lock key alone still excludes");
    }
    assert!(
        violations > 0,
        "the order check must catch a broken grant rule"
    );
}
