//! How a connection that died in silence is noticed: the one rule the engine's lock connections
//! (`pipeline`) and its subscriber connections (`subscriber`) share.
//!
//! A peer can vanish without a FIN or an RST reaching us: a host that lost power, a NAT or firewall
//! that forgot the flow, a server restarted behind a partition. TCP then says nothing until its
//! retransmissions give up, about fifteen minutes later; until then requests on a lock connection
//! only time out one by one (the node never votes again), and a subscriber connection hears no
//! release (every waiter sleeps out its pause).
//!
//! The rule: look once a period; a connection that **owed a reply at the last look and has read
//! nothing since** is taken for dead, closed and reopened. It fires one to two periods after the
//! first reply that did not come, and never on a connection whose every reply takes less than a
//! period. Nothing is replayed on the new connection, so a wrong guess (a node that was only slow)
//! costs what a reset would: the commands in flight fail, as they were about to by their deadlines.
//!
//! A look that comes late (this process was not scheduled: a blocked runtime, a stopped process)
//! judges nothing: the replies may be waiting in the socket, unread by a reader as late as the look.

use std::time::Duration;

use tokio::time::Instant;

/// The period: the connect timeout, which already bounds a handshake of several round trips, and
/// never below one second, so that a loaded machine descheduling a node for a moment is not taken
/// for a death.
pub(crate) fn period(connect_timeout: Duration) -> Duration {
    connect_timeout.max(Duration::from_secs(1))
}

/// What the last look saw.
#[derive(Debug)]
pub(crate) struct Stall {
    period: Duration,
    /// When the last look was.
    at: Instant,
    /// How much had been read by then (the pipeline's replies, the subscriber's reads).
    read: u64,
    /// Whether a reply was owed.
    owed: bool,
}

impl Stall {
    /// Looks `period` apart, the first a period from now.
    pub(crate) fn new(period: Duration) -> Self {
        Self {
            period,
            at: Instant::now(),
            read: 0,
            owed: false,
        }
    }

    /// One look at `now`: whether the connection is dead (a reply was owed at the last look,
    /// nothing was read since, and this look is not late); then remembers `read` (the count now)
    /// and `owed` (whether a reply is owed now) for the next.
    pub(crate) fn look(&mut self, now: Instant, read: u64, owed: bool) -> bool {
        let on_time = now.saturating_duration_since(self.at) < self.period + self.period / 2;
        let dead = on_time && self.owed && read == self.read;
        self.at = now;
        self.read = read;
        self.owed = owed;
        dead
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn dead_only_when_a_reply_was_owed_a_whole_period_and_nothing_came() {
        let period = Duration::from_secs(1);
        let mut s = Stall::new(period);
        let mut t = Instant::now();
        let mut look = |read, owed, after: Duration| {
            t += after;
            s.look(t, read, owed)
        };
        // Idle: nothing owed, nothing read, never dead.
        assert!(!look(0, false, period));
        assert!(!look(0, false, period));
        // A request goes out; the next look is the first to see it owed.
        assert!(!look(0, true, period));
        // It was answered (and another is owed): alive.
        assert!(!look(1, true, period));
        // Owed since the last look and nothing read: dead.
        assert!(look(1, true, period));
        // Owed at a look, then answered with nothing owed after: alive.
        assert!(!look(5, true, period));
        assert!(!look(6, false, period));
        assert!(!look(6, false, period));
        // A late look (this process was not scheduled) judges nothing; the next on-time one does.
        assert!(!look(6, true, period));
        assert!(!look(6, true, period * 3));
        assert!(look(6, true, period));
    }

    #[test]
    fn the_period_is_the_connect_timeout_but_at_least_a_second() {
        assert_eq!(period(Duration::from_millis(50)), Duration::from_secs(1));
        assert_eq!(period(Duration::from_secs(3)), Duration::from_secs(3));
    }
}
