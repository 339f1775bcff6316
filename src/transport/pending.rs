//! [`Pending`], the reply future of one command: a concrete type, so the engine's own transport
//! needs no boxing per command.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::oneshot;

use crate::error::NodeError;
use crate::protocol::cmd::NodeResult;

/// The reply future [`NodeClient::send`] returns: a concrete type, so the hot path stays free of boxing
/// for the engine's own transport.
#[must_use = "the command is already queued; the future only carries its reply"]
pub(crate) struct Pending(PendingInner);

enum PendingInner {
    Ready(Option<NodeResult>),
    /// A reply the connection's task will send (the pipelined transport).
    Channel(oneshot::Receiver<NodeResult>),
    #[allow(dead_code)] // used by the fred transport
    Boxed(Pin<Box<dyn Future<Output = NodeResult> + Send>>),
}

impl Pending {
    pub(crate) fn ready(result: NodeResult) -> Self {
        Self(PendingInner::Ready(Some(result)))
    }

    /// The reply that arrives on `rx`; a dropped sender means the connection task went away with the
    /// request in flight ([`NodeError::ConnectionLost`]).
    pub(crate) fn channel(rx: oneshot::Receiver<NodeResult>) -> Self {
        Self(PendingInner::Channel(rx))
    }

    #[allow(dead_code)] // used by the fred transport
    pub(crate) fn boxed(fut: impl Future<Output = NodeResult> + Send + 'static) -> Self {
        Self(PendingInner::Boxed(Box::pin(fut)))
    }
}

impl Future for Pending {
    type Output = NodeResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<NodeResult> {
        match &mut self.get_mut().0 {
            PendingInner::Ready(result) => Poll::Ready(
                result
                    .take()
                    .unwrap_or_else(|| Err(NodeError::Protocol("reply polled twice".into()))),
            ),
            PendingInner::Channel(rx) => Pin::new(rx)
                .poll(cx)
                .map(|r| r.unwrap_or(Err(NodeError::ConnectionLost))),
            PendingInner::Boxed(fut) => fut.as_mut().poll(cx),
        }
    }
}
