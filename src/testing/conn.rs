//! One client connection to a memory node: commands read as they come (pipelined ones in order),
//! each run under the node's lock, replies written back in batches; pub/sub mode (`SUBSCRIBE`, the
//! messages `PUBLISH` queues for it, `UNSUBSCRIBE`); and the pause: while the node is paused the
//! connection stays open and its commands wait, as on a server stopped with `SIGSTOP`.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::commands::{execute, lookup, unknown, Run};
use super::reply::Reply;
use super::request::next_command;
use super::shared::Shared;

/// A connection's pub/sub side: its id, its queue of messages, its channels.
struct Subscriber {
    id: u64,
    queue: mpsc::UnboundedSender<Bytes>,
    channels: Vec<Bytes>,
}

/// What a command did to the connection.
enum After {
    Continue,
    Close,
}

/// Serves one connection until the client closes it or the node stops (`life` cancelled).
pub(crate) async fn serve(shared: Arc<Shared>, mut stream: TcpStream, life: CancellationToken) {
    let _ = stream.set_nodelay(true);
    let (queue, mut messages) = mpsc::unbounded_channel();
    let mut sub = Subscriber {
        id: shared.conn_id(),
        queue,
        channels: Vec::new(),
    };
    let mut paused = shared.paused.subscribe();
    let mut buf = BytesMut::with_capacity(4096);
    let mut out = BytesMut::new();
    'conn: loop {
        tokio::select! {
            _ = life.cancelled() => break,
            read = stream.read_buf(&mut buf) => {
                if !matches!(read, Ok(n) if n > 0) {
                    break;
                }
                loop {
                    let args = match next_command(&mut buf) {
                        Ok(Some(args)) => args,
                        Ok(None) => break,
                        Err(why) => {
                            Reply::err(why).encode(&mut out);
                            let _ = stream.write_all(&out).await;
                            break 'conn;
                        }
                    };
                    if args.is_empty() {
                        continue;
                    }
                    // Commands wait out a pause here, one by one: those before it were answered.
                    tokio::select! {
                        _ = life.cancelled() => break 'conn,
                        _ = paused.wait_for(|p| !*p) => {}
                    }
                    let after = run(&shared, &mut sub, &args, &mut out);
                    if matches!(after, After::Close) {
                        let _ = stream.write_all(&out).await;
                        break 'conn;
                    }
                }
                if !out.is_empty() && stream.write_all(&out).await.is_err() {
                    break;
                }
                out.clear();
            }
            Some(message) = messages.recv() => {
                tokio::select! {
                    _ = life.cancelled() => break,
                    _ = paused.wait_for(|p| !*p) => {}
                }
                if stream.write_all(&message).await.is_err() {
                    break;
                }
            }
        }
    }
    let mut state = shared.state();
    for channel in &sub.channels {
        state.db.channels.unsubscribe(sub.id, channel);
    }
}

/// Runs one command, its reply appended to `out`.
fn run(shared: &Shared, sub: &mut Subscriber, args: &[Bytes], out: &mut BytesMut) -> After {
    let name = args[0].to_ascii_lowercase();
    let subscribed = !sub.channels.is_empty();
    if subscribed
        && !matches!(
            &name[..],
            b"subscribe" | b"unsubscribe" | b"ping" | b"quit" | b"reset"
        )
    {
        Reply::err(format!(
            "Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are \
allowed in this context",
            String::from_utf8_lossy(&name)
        ))
        .encode(out);
        return After::Continue;
    }
    let Some(command) = lookup(&name) else {
        unknown(args).encode(out);
        return After::Continue;
    };
    if !command.arity_ok(args) {
        Reply::err(format!(
            "wrong number of arguments for '{}' command",
            command.name
        ))
        .encode(out);
        return After::Continue;
    }
    if !matches!(command.run, Run::Connection) {
        if subscribed && &name[..] == b"ping" {
            let message = args.get(1).cloned().unwrap_or_default();
            Reply::Array(vec![Reply::bulk(&b"pong"[..]), Reply::Bulk(message)]).encode(out);
            return After::Continue;
        }
        execute(&mut shared.state(), args).encode(out);
        return After::Continue;
    }
    match &name[..] {
        b"subscribe" => {
            let mut state = shared.state();
            for channel in &args[1..] {
                if state
                    .db
                    .channels
                    .subscribe(sub.id, &sub.queue, channel.clone())
                {
                    sub.channels.push(channel.clone());
                }
                confirm(
                    out,
                    "subscribe",
                    Reply::Bulk(channel.clone()),
                    sub.channels.len(),
                );
            }
        }
        b"unsubscribe" => unsubscribe(shared, sub, &args[1..], out),
        b"reset" => {
            unsubscribe(shared, sub, &[], &mut BytesMut::new());
            Reply::Status(Bytes::from_static(b"RESET")).encode(out);
        }
        _ => {
            // QUIT
            Reply::ok().encode(out);
            return After::Close;
        }
    }
    After::Continue
}

/// `UNSUBSCRIBE [channel...]` (none: every channel of the connection).
fn unsubscribe(shared: &Shared, sub: &mut Subscriber, channels: &[Bytes], out: &mut BytesMut) {
    let channels = if channels.is_empty() {
        sub.channels.clone()
    } else {
        channels.to_vec()
    };
    if channels.is_empty() {
        confirm(out, "unsubscribe", Reply::Nil, 0);
        return;
    }
    let mut state = shared.state();
    for channel in channels {
        state.db.channels.unsubscribe(sub.id, &channel);
        sub.channels.retain(|c| *c != channel);
        confirm(out, "unsubscribe", Reply::Bulk(channel), sub.channels.len());
    }
}

/// A (un)subscription's confirmation: kind, channel, how many the connection has now.
fn confirm(out: &mut BytesMut, kind: &'static str, channel: Reply, count: usize) {
    Reply::Array(vec![
        Reply::bulk(kind.as_bytes()),
        channel,
        Reply::Int(count as i64),
    ])
    .encode(out);
}
