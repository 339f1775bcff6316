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
//! last reply, and never on a connection that answers in less than a period. Nothing is replayed on
//! the new connection, so a wrong guess (a node that was only slow) costs what a reset would: the
//! commands in flight fail, as they were about to by their deadlines.

use std::time::Duration;

/// The period: the connect timeout, which already bounds a handshake of several round trips, and
/// never below one second, so that a loaded machine descheduling a node for a moment is not taken
/// for a death.
pub(crate) fn period(connect_timeout: Duration) -> Duration {
    connect_timeout.max(Duration::from_secs(1))
}

/// What the last look saw.
#[derive(Debug, Default)]
pub(crate) struct Stall {
    /// How much had been read (replies, or frames: any count that grows with every read).
    read: u64,
    /// Whether a reply was owed.
    owed: bool,
}

impl Stall {
    /// Whether nothing was read since the last look (`read` is the count now).
    pub(crate) fn quiet(&self, read: u64) -> bool {
        read == self.read
    }

    /// One look: whether the connection is dead (a reply was owed at the last look and nothing was
    /// read since); then remembers `read` and `owed` (whether a reply is owed now) for the next.
    pub(crate) fn look(&mut self, read: u64, owed: bool) -> bool {
        let dead = self.owed && self.quiet(read);
        self.read = read;
        self.owed = owed;
        dead
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_only_when_a_reply_was_owed_a_whole_period_and_nothing_came() {
        let mut s = Stall::default();
        // Idle: nothing owed, nothing read, never dead.
        assert!(!s.look(0, false));
        assert!(!s.look(0, false));
        // A request goes out; the next look is the first to see it owed.
        assert!(!s.look(0, true));
        // It was answered (and another is owed): alive.
        assert!(!s.look(1, true));
        // Owed since the last look and nothing read: dead.
        assert!(s.look(1, true));
        // Owed at a look, then answered with nothing owed after: alive.
        let mut s = Stall::default();
        assert!(!s.look(5, true));
        assert!(!s.look(6, false));
        assert!(!s.look(6, false));
        assert!(s.quiet(6) && !s.quiet(7));
    }

    #[test]
    fn the_period_is_the_connect_timeout_but_at_least_a_second() {
        assert_eq!(period(Duration::from_millis(50)), Duration::from_secs(1));
        assert_eq!(period(Duration::from_secs(3)), Duration::from_secs(3));
    }
}
