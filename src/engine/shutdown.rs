//! How an engine ends. [`Redlock::shutdown`]: a service's last call on its engine. Every lock it holds is released on
//! every node and the call waits, with a bound, until the nodes have answered those releases and
//! the ones queued before them (dropped guards'), so a process that exits next leaves nothing for
//! its locks' TTL; from then on the engine grants nothing. Without it, the last handle's drop and a
//! guard dropped while panicking still write what is queued ([`Core::flush_now`]).

use std::time::Duration;

use tokio::time::Instant;

use super::core::Core;
use super::Redlock;

/// The longest the engine's last handle waits for the nodes ([`Core::flush_now`]): one that does
/// not answer for this long is not answering (a blackhole); its releases then end at the keys'
/// TTL, as they would have.
const FLUSH_BOUND: Duration = Duration::from_secs(1);

/// The longest a guard dropped while panicking waits: its thread may be a runtime's worker, which
/// the panic does not end (a task's panic is caught), so it blocks that worker this long at worst.
pub(crate) const PANIC_FLUSH_BOUND: Duration = Duration::from_millis(100);

impl Core {
    /// Writes every command queued on the nodes' connections (the releases of dropped guards) to
    /// their sockets from this thread, without the runtime, and waits until each node has answered
    /// them: for a caller the runtime may not outlive, a guard dropped while its thread panics or
    /// the engine's last handle dropped. `bound` at most over all nodes; about one round trip when
    /// the nodes are well.
    pub(crate) fn flush_now(&self, bound: Duration) {
        let until = std::time::Instant::now() + bound;
        for node in self.nodes() {
            node.flush_now(until);
        }
    }
}

impl Drop for Core {
    /// The engine's last handle is gone, typically at the end of `main` with the runtime's end
    /// next, which ends the connections' writers: the releases that guards dropped before it queued
    /// would otherwise never reach the nodes, and their keys would block their resources for a TTL.
    fn drop(&mut self) {
        self.flush_now(FLUSH_BOUND);
    }
}

/// The longest [`Redlock::shutdown`] waits for the nodes' answers: a node that has not answered by
/// then is down or blackholed, and its keys end at their TTL, as they would have.
const SHUTDOWN_BOUND: Duration = Duration::from_secs(2);

impl Redlock {
    /// Shuts this engine down: refuses every later acquire and extend ([`crate::LockError::Closed`],
    /// also to calls waiting now, which get no lock), releases every lock it holds (guards, renewed
    /// locks, plain [`crate::Lock`]s, whoever has them), and waits until the nodes have answered
    /// those releases and the ones dropped guards queued before, 2 s at most.
    /// Locks a node did not answer for expire at their TTL. The engine's clones share it: call it
    /// once, when the service stops (a second call finds nothing left to release). Guards and locks
    /// still held afterwards are no longer locks; dropping or releasing them is harmless.
    ///
    /// ```no_run
    /// # async fn run(redlock: redlock_engine::Redlock) {
    /// // ... on SIGTERM, after the service stopped taking work:
    /// redlock.shutdown().await;
    /// # }
    /// ```
    pub async fn shutdown(&self) {
        let core = self.core();
        core.close();
        // Every lock of this engine says it is not valid from now on, whoever holds it.
        let live = &core.metrics().gauges.held;
        live.close();
        let until = Instant::now() + SHUTDOWN_BOUND;
        // Owner-checked releases, sent like a dropped guard's (re-sent where one does not land): a
        // lock another task is releasing at this moment gets a second copy, which finds its keys
        // gone and does nothing.
        for release in live.releases() {
            core.release_retry().fire(core.nodes(), &release, until);
        }
        // Every release queued so far, ours and the dropped guards', is settled: answered, or past
        // the bound.
        while core.release_retry().pending() > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}
