//! The HTTP example checking itself (`REDLOCK_EXAMPLE_SELFTEST=1`, what CI runs): two replicas of
//! the service (each its own engine and port, one shared store) answer concurrent requests from a
//! real HTTP client (hyper's); a held order answers 409; then the shutdown starts while requests wait
//! for an order's lock, and they must all finish. Checked: never two requests inside one order's lock,
//! no payment lost, no lock left on the nodes. Any failed check exits non-zero.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{Request, StatusCode};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use redlock_engine::Redlock;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{locks_left, serve, App, Store};

type Error = Box<dyn std::error::Error + Send + Sync>;
type HttpClient = Client<HttpConnector, Empty<Bytes>>;

const ORDERS: u64 = 6;
const PER_ORDER: u64 = 8;

pub(super) async fn run(urls: Vec<String>, quarantine: bool) -> Result<(), Error> {
    let store = Arc::new(Store::default());
    let stop = CancellationToken::new();
    let (mut addrs, mut servers, mut engines) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..2 {
        let redlock = Redlock::builder()
            .nodes(urls.clone())
            .quarantine(quarantine)
            .build()
            .await?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        addrs.push(listener.local_addr()?);
        let app = App {
            redlock: redlock.clone(),
            store: store.clone(),
        };
        servers.push(tokio::spawn(serve(
            listener,
            app,
            stop.clone().cancelled_owned(),
        )));
        engines.push(redlock);
    }
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();

    // 1. 48 payments of 6 orders at once, alternating between the replicas.
    let calls = (0..ORDERS * PER_ORDER).map(|i| pay(&client, addrs[i as usize % 2], i % ORDERS));
    let mut numbers: HashMap<u64, Vec<u64>> = HashMap::new();
    for (i, answer) in futures::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        let (status, body) = answer?;
        check(status == StatusCode::OK, format!("{status}: {body}"))?;
        numbers
            .entry(i as u64 % ORDERS)
            .or_default()
            .push(number(&body)?);
    }
    // Each order's answers say payment 1, 2, ..., 8, each once: no two requests read the same count.
    for n in numbers.values_mut() {
        n.sort_unstable();
        check(*n == (1..=PER_ORDER).collect::<Vec<_>>(), format!("{n:?}"))?;
    }
    println!("{} payments of {ORDERS} orders on 2 replicas: each order's numbered 1..={PER_ORDER}, none lost", ORDERS * PER_ORDER);

    // 2. An order someone else holds: the request waits LOCK_WAIT, then answers 409 Conflict.
    let held = engines[1].lock("order:500").await?;
    let (status, _) = pay(&client, addrs[0], 500).await?;
    check(
        status == StatusCode::CONFLICT,
        format!("held order: {status}"),
    )?;
    println!("an order held elsewhere: {status}");
    held.release().await?;

    // 3. Shutdown while 8 requests for order 7 queue on its lock: every one of them finishes.
    let received = store.requests.load(Ordering::SeqCst) + PER_ORDER as usize;
    let late: Vec<_> = (0..PER_ORDER as usize)
        .map(|i| tokio::spawn(pay(&client, addrs[i % 2], 7)))
        .collect();
    while store.requests.load(Ordering::SeqCst) < received {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    stop.cancel();
    let mut finished = 0;
    for answer in late {
        let (status, body) = answer.await??;
        check(
            status == StatusCode::OK,
            format!("in flight: {status}: {body}"),
        )?;
        finished += 1;
    }
    for server in servers {
        server.await??;
    }
    println!("shut down with {PER_ORDER} requests in flight: {finished} finished with 200 OK");

    // 4. The lock kept every order to one request at a time, and nothing is left on the nodes.
    let max = *store.max_inside.lock().unwrap();
    println!("most requests inside one order's lock at once: {max}");
    let left = locks_left(&engines[0], &store).await?;
    println!("locks left on the nodes: {left}");
    check(max == 1 && left == 0, "overlap or leftover".into())?;
    println!("selftest passed");
    Ok(())
}

/// `POST /orders/{id}/pay` on `addr`: the status and the body.
fn pay(
    client: &HttpClient,
    addr: SocketAddr,
    id: u64,
) -> impl std::future::Future<Output = Result<(StatusCode, String), Error>> + Send + 'static {
    let client = client.clone();
    async move {
        let request = Request::post(format!("http://{addr}/orders/{id}/pay")).body(Empty::new())?;
        let response = client.request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    }
}

/// The payment number in `order 3: payment 5 (...)`.
fn number(body: &str) -> Result<u64, Error> {
    let n = body
        .split("payment ")
        .nth(1)
        .and_then(|s| s.split(' ').next());
    Ok(n.ok_or_else(|| format!("no payment number in {body:?}"))?
        .parse()?)
}

fn check(ok: bool, what: String) -> Result<(), Error> {
    if ok {
        Ok(())
    } else {
        Err(format!("check failed: {what}").into())
    }
}
