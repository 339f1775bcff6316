//! [`Pending`], the reply future of one command: a concrete type, so the engine's own transport
//! needs no boxing per command.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{pipeline, NodeResult};
use crate::error::NodeError;

/// The reply future [`NodeClient::send`] returns: a concrete type, so the hot path stays free of boxing
/// for the engine's own transport.
#[must_use = "the command is already queued; the future only carries its reply"]
pub(crate) struct Pending(PendingInner);

enum PendingInner {
    Ready(Option<NodeResult>),
    Pipeline(pipeline::Waiter),
    #[allow(dead_code)] // used by the fred transport
    Boxed(Pin<Box<dyn Future<Output = NodeResult> + Send>>),
}

impl Pending {
    pub(crate) fn ready(result: NodeResult) -> Self {
        Self(PendingInner::Ready(Some(result)))
    }

    pub(crate) fn pipeline(waiter: pipeline::Waiter) -> Self {
        Self(PendingInner::Pipeline(waiter))
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
            PendingInner::Pipeline(waiter) => Pin::new(waiter).poll(cx),
            PendingInner::Boxed(fut) => fut.as_mut().poll(cx),
        }
    }
}
