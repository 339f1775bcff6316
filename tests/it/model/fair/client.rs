//! The fair model's waiters: enqueue (and agree on the ticket when the nodes gave different ones),
//! attempt, wait (for a wake-up or their own pause), hold and release; pauses and deaths while the
//! faults last.

use super::node::{Answer, Msg, Rules, DRIFT, FAULTS_END, TIMEOUT, TTL};
use super::sim::{Claim, Ev, Handed, Phase, Place, Sim};

impl Sim {
    pub fn start_round(&mut self, c: usize, phase: Phase, msg: Msg) {
        let now = self.now;
        let cl = &mut self.clients[c];
        cl.round += 1;
        cl.phase = phase;
        cl.round_start = now;
        (cl.yes, cl.queued, cl.missing, cl.answered) = (0, 0, 0, 0);
        (cl.granted_mask, cl.answered_mask) = (0, 0);
        cl.queued_nodes.clear();
        cl.tickets.clear();
        cl.notified = false;
        let round = cl.round;
        if matches!(phase, Phase::Enqueue | Phase::Attempt) {
            self.rounds += 1;
        }
        self.broadcast(c, msg);
        self.push(now + TIMEOUT, Ev::Timer { client: c, round });
    }

    pub fn start_acquire(&mut self, c: usize) {
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
        self.clients[c].complete = false;
        // The hint: the waiter's clock, off by its skew (never trusted: any hint must do).
        let hint = (self.now as i64 + self.clients[c].skew).max(1) as u64;
        let epoch = self.new_epoch(c);
        self.start_round(c, Phase::Enqueue, Msg::Enqueue { hint, epoch });
    }

    /// A round of the waiter's goes: a new epoch, from now.
    /// Two numbers: the round's, and its unlock's (`Msg::Unlock`).
    fn new_epoch(&mut self, c: usize) -> u64 {
        self.next_epoch += 2;
        let cl = &mut self.clients[c];
        (cl.epoch, cl.epoch_start, cl.heard, cl.unlocked) = (self.next_epoch, self.now, 0, 0);
        cl.epoch
    }

    /// An attempt from the waiter's place, in a new epoch.
    fn attempt(&mut self, c: usize) {
        let ticket = self.clients[c].ticket;
        let epoch = self.new_epoch(c);
        self.start_round(c, Phase::Attempt, Msg::Attempt { ticket, epoch });
    }

    /// A release's grant by message reached the waiter: counted for its current epoch only (the
    /// round's, or its unlock's from the nodes the unlock went to); a
    /// waiter between rounds holds the lock once a majority granted it, its validity from the
    /// start of the round that set the epoch (the engine's `granted_by_message`). Too few: an
    /// attempt soon (the engine waits a short window for the rest).
    pub fn grant_heard(&mut self, c: usize, node: usize, epoch: u64) {
        let cl = &mut self.clients[c];
        let current = cl.epoch + u64::from(cl.unlocked & (1 << node) != 0);
        if epoch != current && self.rules != Rules::AnyEpoch {
            return;
        }
        cl.heard |= 1 << node;
        if cl.phase == Phase::Waiting && !self.take_grants(c) {
            let round = self.clients[c].round;
            self.push(self.now + 3, Ev::Timer { client: c, round });
        }
    }

    /// Between rounds: the lock if the grants heard for the current epoch make a majority.
    fn take_grants(&mut self, c: usize) -> bool {
        let q = self.quorum();
        let cl = &self.clients[c];
        if (cl.heard.count_ones() as usize) < q {
            return false;
        }
        let valid_until = cl.epoch_start + TTL - DRIFT;
        if self.now + TTL / 10 <= valid_until {
            self.by_message += 1;
            self.granted(c, valid_until);
        } else {
            self.attempt(c);
        }
        true
    }

    /// Whether the client is paused or dead now; a paused client's event runs when it resumes.
    pub fn deferred(&mut self, c: usize, ev: Ev) -> bool {
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

    pub fn at_client(&mut self, c: usize, round: u64, node: usize, answer: Answer) {
        if self.clients[c].round != round {
            return; // a late answer of an earlier round never counts
        }
        let q = self.quorum();
        let cl = &mut self.clients[c];
        cl.answered += 1;
        cl.answered_mask |= 1 << node;
        match answer {
            Answer::Placed { granted, ticket } => {
                cl.queued += 1;
                cl.queued_nodes.push(node);
                cl.tickets.push((node, ticket));
                if granted {
                    cl.yes += 1;
                    cl.granted_mask |= 1 << node;
                }
            }
            Answer::Granted => {
                cl.yes += 1;
                cl.queued += 1;
                cl.queued_nodes.push(node);
                cl.granted_mask |= 1 << node;
            }
            Answer::Queued => {
                cl.queued += 1;
                cl.queued_nodes.push(node);
            }
            Answer::Missing => cl.missing += 1,
            // A release's answer goes to its claim, never to a round.
            Answer::Released { .. } => {}
        }
        let all = cl.answered == self.nodes.len();
        match cl.phase {
            // Like the engine: an enqueue waits for every answer (its ticket is their highest).
            Phase::Enqueue if all => self.end_round(c),
            Phase::Attempt if all || cl.yes >= q => self.end_round(c),
            _ => {}
        }
    }

    /// The place is complete: a majority holds `(ticket, value)` (`nodes`, as their answers said;
    /// with [`Rules::LateAgree`], an entry of the waiter's with whatever ticket).
    fn complete(&mut self, c: usize, nodes: Vec<usize>) {
        let now = self.now;
        let late = self.rules == Rules::LateAgree;
        let cl = &mut self.clients[c];
        cl.complete = true;
        let (p, value, ticket) = (cl.place.unwrap(), cl.value, cl.ticket);
        // An entry already gone again by the time the answers are read: the place is lost.
        let lost = nodes.iter().any(|&x| {
            self.nodes[x]
                .queue
                .get(&value)
                .is_none_or(|e| e.0 != ticket && !late)
        });
        let place = &mut self.places[p];
        place.completed = Some(now);
        place.majority = nodes;
        if lost {
            place.lost_at = Some(now);
        }
    }

    /// A round decided (majority won, every answer in, or its timer).
    pub fn end_round(&mut self, c: usize) {
        let q = self.quorum();
        let n = self.nodes.len();
        let rules = self.rules;
        let cl = &mut self.clients[c];
        let phase = cl.phase;
        cl.round += 1; // later answers of this round are stale
        if !matches!(phase, Phase::Enqueue | Phase::Attempt) {
            return;
        }
        let mut agree_now = false;
        if phase == Phase::Enqueue {
            if cl.queued < q {
                return self.requeue(c);
            }
            // The q-th lowest ticket answered: the highest of its lowest majority.
            let mut given: Vec<u64> = cl.tickets.iter().map(|&(_, t)| t).collect();
            given.sort_unstable();
            let ticket = given[q - 1];
            cl.ticket = ticket;
            let agreed: Vec<usize> = cl
                .tickets
                .iter()
                .filter(|&&(_, t)| t == ticket)
                .map(|&(x, _)| x)
                .collect();
            if agreed.len() >= q {
                self.complete(c, agreed);
            } else if rules == Rules::LateAgree {
                let nodes = self.clients[c].queued_nodes.clone();
                self.complete(c, nodes);
            } else {
                agree_now = true;
            }
        } else if !self.clients[c].complete && self.clients[c].queued >= q {
            let nodes = self.clients[c].queued_nodes.clone();
            self.complete(c, nodes);
        }
        let cl = &mut self.clients[c];
        let valid_until = cl.round_start + TTL - DRIFT;
        if cl.yes >= q && self.now + TTL / 10 <= valid_until {
            return self.granted(c, valid_until);
        }
        // Keys of ours from this round go where a node granted or did not answer; the place stays.
        let (missing, unlock) = (cl.missing, cl.granted_mask | !cl.answered_mask);
        // The unlock moves the nodes it goes to on to the round's second epoch (the others' grants
        // of the round's epoch still count).
        let unlocked = unlock & ((1u16 << n) - 1);
        if unlocked != 0 {
            let cl = &mut self.clients[c];
            cl.unlocked = unlocked;
            cl.heard &= !unlocked;
            let epoch = cl.epoch + 1;
            self.send(c, Msg::Unlock { epoch }, unlock);
        }
        if phase == Phase::Attempt && missing > n - q {
            return self.requeue(c);
        }
        if agree_now {
            // The agree round: at once, an attempt carrying the ticket.
            return self.attempt(c);
        }
        self.wait(c);
    }

    pub fn requeue(&mut self, c: usize) {
        // The place's last epoch: its last round's unlock's.
        let epoch = self.clients[c].epoch + 1;
        self.broadcast(c, Msg::Leave { epoch });
        self.start_acquire(c);
    }

    pub fn wait(&mut self, c: usize) {
        self.clients[c].phase = Phase::Waiting;
        if self.take_grants(c) {
            return;
        }
        let cl = &mut self.clients[c];
        let round = cl.round;
        if cl.notified {
            cl.notified = false;
            self.push(self.now, Ev::Timer { client: c, round });
        } else {
            let pause = 10 + self.rng.below(15);
            self.push(self.now + pause, Ev::Timer { client: c, round });
        }
    }

    pub fn granted(&mut self, c: usize, valid_until: u64) {
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

    pub fn timer(&mut self, c: usize, round: u64) {
        if self.clients[c].round != round {
            return;
        }
        match self.clients[c].phase {
            Phase::Idle => {
                if self.now < FAULTS_END {
                    self.start_acquire(c)
                }
            }
            Phase::Enqueue | Phase::Attempt => self.end_round(c),
            Phase::Waiting => self.attempt(c),
            Phase::Holding => {
                // The hold ends at the timer; the release may be cut short by the validity.
                if let Some(h) = self.holds.iter_mut().rev().find(|h| h.3 == c) {
                    h.2 = h.2.min(self.now);
                }
                self.release(c);
                let cl = &mut self.clients[c];
                cl.phase = Phase::Idle;
                cl.place = None;
                cl.round += 1;
                let round = cl.round;
                let next = self.now + self.rng.below(TTL);
                self.push(next, Ev::Timer { client: c, round });
            }
            // Its timers are void while a release's claim is open.
            Phase::Claimed | Phase::Dead => {}
        }
    }

    /// The holder's release: it names its process's lowest-ticketed waiter if that one is parked
    /// (waiting between rounds; one in a round, or paused in one, means none), like
    /// `Core::claim_successor`.
    fn release(&mut self, c: usize) {
        let process = c / self.per_process;
        let next = (0..self.clients.len())
            .filter(|&w| w != c && w / self.per_process == process)
            .filter(|&w| {
                let cl = &self.clients[w];
                cl.place.is_some() && matches!(cl.phase, Phase::Waiting | Phase::Attempt)
            })
            .min_by_key(|&w| (self.clients[w].ticket, self.clients[w].value));
        let Some(w) = next.filter(|&w| self.clients[w].phase == Phase::Waiting) else {
            return self.broadcast(c, Msg::Release);
        };
        let holder = self.clients[c].value;
        let cl = &mut self.clients[w];
        cl.phase = Phase::Claimed;
        cl.round += 1; // its pause timer is void while claimed
        let msg = Msg::ReleaseTo {
            holder,
            next: cl.value,
            ticket: cl.ticket,
            claim: self.claims.len(),
        };
        self.claims.push(Claim {
            waiter: w,
            start: self.now,
            answered: 0,
            granted: 0,
            done: false,
        });
        let claim = self.claims.len() - 1;
        // On the waiter's connections: the engine has one per node for all its tasks, so the
        // release comes after every command of the waiter's sent before (its rounds' unlocks).
        self.broadcast(w, msg);
        self.push(self.now + TIMEOUT, Ev::ClaimTimer { claim });
    }

    /// A node's answer to a claim's release (`None`: its deadline): decided once a majority
    /// granted or cannot, and then handed to the waiter.
    pub fn at_claim(&mut self, claim: usize, granted: Option<bool>) {
        let (n, q) = (self.nodes.len(), self.quorum());
        let cl = &mut self.claims[claim];
        if cl.done {
            return;
        }
        if let Some(granted) = granted {
            cl.answered += 1;
            cl.granted += usize::from(granted);
        }
        let lost = cl.answered - cl.granted > n - q;
        let answer = if cl.granted >= q {
            let valid_until = cl.start + TTL - DRIFT;
            if self.now + TTL / 10 <= valid_until {
                Handed::Lock { valid_until }
            } else {
                Handed::TryNow
            }
        } else if granted.is_none() && (cl.granted > 0 || cl.answered < n) {
            Handed::TryNow
        } else if lost {
            if cl.granted > 0 {
                Handed::TryNow
            } else {
                Handed::Stay
            }
        } else if granted.is_none() {
            Handed::Stay
        } else {
            return;
        };
        cl.done = true;
        let client = cl.waiter;
        self.push(self.now, Ev::Handed { client, answer });
    }

    /// The waiter takes its claim's answer: the lock, an attempt at once, or back to waiting (at
    /// once if a wake-up came while it was claimed).
    pub fn handed(&mut self, c: usize, answer: Handed) {
        if self.clients[c].phase != Phase::Claimed {
            return;
        }
        match answer {
            Handed::Lock { valid_until } if self.now + TTL / 10 <= valid_until => {
                self.handed += 1;
                self.granted(c, valid_until)
            }
            Handed::Lock { .. } | Handed::TryNow => self.attempt(c),
            Handed::Stay => self.wait(c),
        }
    }

    pub fn start_round_if(&mut self, c: usize, round: u64) {
        if self.clients[c].round == round && self.clients[c].paused_until <= self.now {
            self.attempt(c);
        }
    }
}
