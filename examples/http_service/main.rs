//! An HTTP service (axum) that takes a lock per request: `POST /orders/{id}/pay` locks `order:{id}`
//! through a guard, does a read-modify-write of the order's payment count in a shared store (your
//! database), and releases. Lock errors become HTTP statuses by their class; a graceful shutdown
//! (ctrl-c, SIGTERM) lets in-flight requests finish and release their locks: none is left behind.
//!
//! Run: `cargo run --example http_service`, then `curl -X POST localhost:3000/orders/7/pay`; ctrl-c
//! stops it (`REDLOCK_EXAMPLE_ADDR` picks another address). `REDLOCK_EXAMPLE_SELFTEST=1` instead runs
//! (`selftest.rs`) two replicas of the service on one store, sends them concurrent requests with a real HTTP client,
//! shuts them down with requests in flight and checks the result (what CI runs).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use redlock_engine::{ErrorClass, LockError, Redlock, Verdict};
use tokio::net::TcpListener;

mod selftest;
#[path = "../support/mod.rs"]
mod support;

/// How long a request waits for its order's lock before answering 409.
const LOCK_WAIT: Duration = Duration::from_secs(2);
/// The work done under the lock (a call to the payment provider).
const WORK: Duration = Duration::from_millis(10);

/// What every handler shares: the engine (one per process: it is a handle, cheap to clone) and the
/// store the lock protects.
#[derive(Clone)]
struct App {
    redlock: Redlock,
    store: Arc<Store>,
}

/// Payments per order, requests received, and who is inside an order's lock right now (to see an
/// overlap if there were one: the lock is what keeps it at 1).
#[derive(Default)]
struct Store {
    paid: Mutex<HashMap<u64, u64>>,
    requests: AtomicUsize,
    inside: Mutex<HashMap<u64, usize>>,
    max_inside: Mutex<usize>,
}

impl Store {
    fn enter(&self, id: u64) -> usize {
        let mut inside = self.inside.lock().unwrap();
        let now = inside.entry(id).or_default();
        *now += 1;
        let mut max = self.max_inside.lock().unwrap();
        *max = (*max).max(*now);
        *now
    }

    fn leave(&self, id: u64) {
        *self.inside.lock().unwrap().entry(id).or_default() -= 1;
    }

    fn orders(&self) -> Vec<u64> {
        self.paid.lock().unwrap().keys().copied().collect()
    }
}

async fn pay(State(app): State<App>, Path(id): Path<u64>) -> Result<String, Response> {
    app.store.requests.fetch_add(1, Ordering::SeqCst);
    // 1. The order's lock, waiting up to LOCK_WAIT. If the client goes away meanwhile, axum drops this
    //    future: the wait is withdrawn and nothing is left on the nodes.
    let guard = app
        .redlock
        .lock(format!("order:{id}"))
        .ttl(Duration::from_secs(10))
        .wait_up_to(LOCK_WAIT)
        .await
        .map_err(to_response)?;

    // 2. Read, work, write: without the lock, two requests would both read n and both write n + 1.
    let inside = app.store.enter(id);
    let paid = app
        .store
        .paid
        .lock()
        .unwrap()
        .get(&id)
        .copied()
        .unwrap_or(0);
    tokio::time::sleep(WORK).await;
    app.store.leave(id);
    if !guard.is_valid() {
        // The TTL ran out during the work: someone else may hold the order now. Do not write.
        return Err(to_response(LockError::Lost));
    }
    app.store.paid.lock().unwrap().insert(id, paid + 1);

    // 3. Release now (awaited: another request of this process waiting for the order gets it at
    //    once). On an early return above, dropping the guard releases it in the background.
    if let Err(e) = guard.release().await {
        eprintln!("order {id}: release: {e} (the lock expires at its TTL)");
    }
    Ok(format!(
        "order {id}: payment {} ({inside} inside the lock)\n",
        paid + 1
    ))
}

/// A lock error as the client should read it: what to do next, by [`ErrorClass`].
fn to_response(e: LockError) -> Response {
    let (status, retry_after) = match e.class() {
        // Another request holds the order: come back when its lock can have run out at the
        // latest, as the nodes said (whole seconds, at least 1), or in a second if they did not.
        ErrorClass::Busy => {
            let wait = e
                .retry_after()
                .map_or(1, |d| d.as_millis().div_ceil(1000).max(1));
            (StatusCode::CONFLICT, Some(wait as u64))
        }
        // The lock's nodes are down or slow, or this process is overloaded: back off.
        ErrorClass::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, Some(5)),
        // Lost (the lock ran out mid-request) or invalid (a bug here): our fault, not the client's.
        _ => (StatusCode::INTERNAL_SERVER_ERROR, None),
    };
    let mut response = (status, format!("{e}\n")).into_response();
    if let Some(secs) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, secs.into());
    }
    response
}

/// Serves `app` on `listener` until `shutdown` completes, then waits for the requests in flight:
/// each ends by releasing its guard.
async fn serve(
    listener: TcpListener,
    app: App,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = Router::new()
        .route("/orders/{id}/pay", post(pay))
        .with_state(app);
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

/// How many of the store's orders some node still holds a lock on.
async fn locks_left(redlock: &Redlock, store: &Store) -> Result<usize, LockError> {
    let mut left = 0;
    for id in store.orders() {
        let seen = redlock.inspect(format!("order:{id}")).await?;
        left += usize::from(seen.verdict != Verdict::Free || seen.held_on > 0);
    }
    Ok(left)
}

/// ctrl-c, or SIGTERM (what a container orchestrator sends).
async fn shutdown_signal() {
    let term = async {
        #[cfg(unix)]
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler")
            .recv()
            .await;
        #[cfg(not(unix))]
        std::future::pending::<()>().await;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
    println!("shutting down: finishing the requests in flight");
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (urls, servers) = support::nodes()?;
    if std::env::var_os("REDLOCK_EXAMPLE_SELFTEST").is_some() {
        let quarantine = servers.quarantine();
        return selftest::run(urls, quarantine)
            .await
            .map_err(|e| -> Box<dyn std::error::Error> { e });
    }
    let redlock = Redlock::builder()
        .nodes(urls)
        .quarantine(servers.quarantine())
        .build()
        .await?;
    let app = App {
        redlock: redlock.clone(),
        store: Arc::default(),
    };
    let addr: SocketAddr = std::env::var("REDLOCK_EXAMPLE_ADDR")
        .unwrap_or_else(|_| "127.0.0.1:3000".into())
        .parse()?;
    let listener = TcpListener::bind(addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    serve(listener, app.clone(), shutdown_signal()).await?;
    // Whatever this process still holds (a request cut short, a guard dropped in the background) is
    // released now, and the nodes have answered before the process exits.
    redlock.shutdown().await;
    println!(
        "stopped after {} orders; locks left on the nodes: {}",
        app.store.orders().len(),
        locks_left(&redlock, &app.store).await?
    );
    Ok(())
}
