//! The pipelined connection as a [`NodeClient`]: sending, whether it votes, what it reports.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::PipelineNode;
use crate::algo::clock::JumpLog;
use crate::algo::rtt::RttEstimate;
use crate::error::NodeError;
use crate::transport::{Cmd, LinkStatus, NodeClient, NodeResult, Pending};

impl NodeClient for PipelineNode {
    fn send(&self, cmd: &Cmd) -> Pending {
        let (tx, rx) = oneshot::channel();
        match self.shared.enqueue(cmd, false, tx) {
            Ok(()) => Pending::pipeline(Waiter { rx }),
            Err(e) => Pending::ready(Err(e)),
        }
    }

    fn send_encoded(&self, cmd: &Cmd, encoded: &[u8]) -> Pending {
        let (tx, rx) = oneshot::channel();
        match self.shared.enqueue_frame(cmd, Some(encoded), tx) {
            Ok(()) => Pending::pipeline(Waiter { rx }),
            Err(e) => Pending::ready(Err(e)),
        }
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
        }
    }
}

/// The reply future of one pipelined command.
#[derive(Debug)]
pub(crate) struct Waiter {
    rx: oneshot::Receiver<NodeResult>,
}

impl Future for Waiter {
    type Output = NodeResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<NodeResult> {
        // A dropped sender means the connection task went away with the request in flight.
        Pin::new(&mut self.get_mut().rx)
            .poll(cx)
            .map(|r| r.unwrap_or(Err(NodeError::ConnectionLost)))
    }
}
