//! A node's listening life: the socket on its port and one task per connection, all ended together
//! when it stops, so a stopped node refuses connections and its clients see theirs closed.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::conn;
use super::shared::Shared;

/// A node listening: stop it with [`Listening::stop`].
#[derive(Debug)]
pub(crate) struct Listening {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

/// Listens on `127.0.0.1:port` (0: any free port); the port it got. `life` is the node handle's:
/// when it is cancelled (the handle dropped), this ends too.
pub(crate) async fn listen(
    shared: Arc<Shared>,
    port: u16,
    life: &CancellationToken,
) -> std::io::Result<(Listening, u16)> {
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let port = listener.local_addr()?.port();
    let stop = life.child_token();
    let task = tokio::spawn(accept(listener, shared, stop.clone()));
    Ok((Listening { stop, task }, port))
}

impl Listening {
    /// Closes the socket and every connection; returns once they are closed.
    pub(crate) async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

async fn accept(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    conns.spawn(conn::serve(shared.clone(), stream, stop.clone()));
                }
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    conns.shutdown().await;
}
