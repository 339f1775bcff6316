//! The pipelined connection as a [`NodeClient`]: sending, whether it votes, what it reports.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::PipelineNode;
use crate::algo::clock::JumpLog;
use crate::algo::rtt::RttEstimate;
use crate::protocol::cmd::Cmd;
use crate::protocol::server::Profile;
use crate::transport::{LinkStatus, NodeClient, Pending};

impl NodeClient for PipelineNode {
    fn flush_now(&self, until: std::time::Instant) {
        self.shared.flush_now(until);
    }

    fn send(&self, cmd: &Cmd) -> Pending {
        let (tx, rx) = oneshot::channel();
        match self.shared.enqueue(cmd, false, tx) {
            Ok(()) => Pending::channel(rx),
            Err(e) => Pending::ready(Err(e)),
        }
    }

    fn send_encoded(&self, cmd: &Cmd, encoded: &[u8], profile: Profile) -> Pending {
        let (tx, rx) = oneshot::channel();
        match self.shared.enqueue_frame(cmd, Some((encoded, profile)), tx) {
            Ok(()) => Pending::channel(rx),
            Err(e) => Pending::ready(Err(e)),
        }
    }

    fn profile(&self) -> Profile {
        Profile::from_code(self.shared.profile.load(Ordering::Relaxed))
    }

    fn is_connected(&self) -> bool {
        self.shared.lock().connected
    }

    fn votes(&self) -> bool {
        self.shared.quarantine.votes() && self.shared.clock.votes()
    }

    fn clock_jumped(&self) -> bool {
        !self.shared.clock.votes()
    }

    fn report_jumps(&self, log: Arc<JumpLog>, index: usize) {
        self.shared.clock.report_to(log, index);
    }

    fn run_id(&self) -> Option<String> {
        self.shared.quarantine.run_id()
    }

    fn backlog(&self) -> usize {
        self.shared.backlog.load(Ordering::Relaxed)
    }

    fn last_reply(&self) -> Option<Instant> {
        self.shared.lock().last_reply
    }

    fn rtt(&self) -> Option<&RttEstimate> {
        Some(&self.shared.rtt)
    }

    fn batches(&self) -> bool {
        // This transport only ever serves standalone nodes.
        true
    }

    fn status(&self) -> LinkStatus {
        let (connected, last_error) = {
            let st = self.shared.lock();
            (st.connected, st.last_error.clone())
        };
        LinkStatus {
            connected,
            quarantine: Some(self.shared.quarantine.view()),
            silenced_until: self.shared.clock.silenced_until(),
            last_error,
            ..Default::default()
        }
    }
}
