//! The fair model's waiters: take a ticket, enqueue, attempt, wait (for a wake-up or their own pause),
//! hold and release; pauses and deaths while the faults last.

use super::node::{Answer, Msg, DRIFT, FAULTS_END, TIMEOUT, TTL};
use super::sim::{Ev, Phase, Place, Sim};

impl Sim {
    pub fn start_round(&mut self, c: usize, phase: Phase, msg: Msg) {
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
        self.start_round(c, Phase::Ticket, Msg::Ticket);
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
    pub fn end_round(&mut self, c: usize) {
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

    pub fn requeue(&mut self, c: usize) {
        self.broadcast(c, Msg::Leave);
        self.start_acquire(c);
    }

    pub fn wait(&mut self, c: usize) {
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

    pub fn start_round_if(&mut self, c: usize, round: u64) {
        if self.clients[c].round == round && self.clients[c].paused_until <= self.now {
            let ticket = self.clients[c].ticket;
            self.start_round(c, Phase::Attempt, Msg::Attempt { ticket });
        }
    }
}
