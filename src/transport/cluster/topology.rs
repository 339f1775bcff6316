//! Reading a cluster's slot map from one of its members: `CLUSTER SHARDS` (Redis 7.0+, Valkey),
//! `CLUSTER SLOTS` where that is unknown. One short-lived connection per read, with the lock
//! connections' handshake (AUTH) and bounds: the reply is framed by `bounded` before
//! `redis-protocol` parses it (so its recursion stops at `MAX_DEPTH`), and every number is checked
//! before use — a hostile member gets its map refused, never a panic or a slot out of range.

use bytes::BytesMut;
use redis_protocol::resp2::decode::decode_bytes_mut;
use redis_protocol::resp2::types::BytesFrame;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::addr::NodeAddr;
use crate::error::NodeError;
use crate::transport::bounded::Framer;
use crate::transport::connect::{open, Stream};
use crate::transport::resp::encode_args;
use crate::transport::ConnectOptions;

/// Hash slots of a Redis Cluster.
pub(super) const SLOTS: usize = 16384;

/// One shard as the cluster describes it: its master and the slot ranges it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ShardInfo {
    pub(super) master: (String, u16),
    /// Inclusive ranges, each within `0..SLOTS`.
    pub(super) ranges: Vec<(u16, u16)>,
    /// Its replicas (a replica seen once and promoted later is quarantined: see the router).
    pub(super) replicas: Vec<(String, u16)>,
}

/// Reads the slot map through `member` (bounded by `connect_timeout`).
pub(super) async fn fetch(
    member: &NodeAddr,
    opts: &ConnectOptions,
) -> Result<Vec<ShardInfo>, NodeError> {
    let (stream, _) = open(member, opts, false).await?;
    let read = async {
        match stream {
            Stream::Tcp(mut tcp) => query(&mut tcp, member, opts).await,
            Stream::Tls(mut tls) => query(&mut *tls, member, opts).await,
        }
    };
    tokio::time::timeout(opts.connect_timeout, read)
        .await
        .unwrap_or_else(|_| {
            Err(NodeError::Connect(format!(
                "{member}: CLUSTER SHARDS timed out"
            )))
        })
}

async fn query<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    member: &NodeAddr,
    opts: &ConnectOptions,
) -> Result<Vec<ShardInfo>, NodeError> {
    let bad = |why: &dyn std::fmt::Display| NodeError::Protocol(format!("{member}: {why}"));
    let mut framer = Framer::new(opts.limits);
    let mut buf = BytesMut::with_capacity(4096);
    // `CLUSTER SHARDS`'s refusal, said with `CLUSTER SLOTS`'s if that is refused too: a lock user
    // lacking both permissions learns what to grant (an older server's "unknown subcommand" says
    // which one applies).
    let mut refused_shards = None;
    for subcommand in [&b"SHARDS"[..], b"SLOTS"] {
        let mut out = BytesMut::new();
        encode_args(&mut out, &[b"CLUSTER", subcommand]);
        stream.write_all(&out).await.map_err(|e| bad(&e))?;
        stream.flush().await.map_err(|e| bad(&e))?;
        let mut frame = loop {
            if let Some(frame) = framer.next_frame(&mut buf).map_err(|e| bad(&e))? {
                break frame;
            }
            if stream.read_buf(&mut buf).await.map_err(|e| bad(&e))? == 0 {
                return Err(bad(&"closed while reading the slot map"));
            }
        };
        let parsed = match decode_bytes_mut(&mut frame) {
            Ok(Some((frame, _, _))) => frame,
            _ => return Err(bad(&"malformed CLUSTER reply")),
        };
        match (subcommand, parsed) {
            // An older server, or a user without `+cluster|shards`: try `CLUSTER SLOTS`.
            (b"SHARDS", BytesFrame::Error(e)) => refused_shards = Some(e),
            (_, BytesFrame::Error(e)) => {
                return Err(NodeError::Connect(format!(
                    "{member}: the slot map cannot be read: CLUSTER SHARDS: {}; CLUSTER SLOTS: {e}",
                    refused_shards.as_deref().unwrap_or("-")
                )))
            }
            (b"SHARDS", frame) => return shards(&frame, member.tls).map_err(|e| bad(&e)),
            (_, frame) => return slots(&frame).map_err(|e| bad(&e)),
        }
    }
    Err(bad(&"no slot map"))
}

/// `CLUSTER SHARDS`: per shard a map `slots` (flat start/end pairs) and `nodes` (maps with `ip` or
/// `endpoint`, `port` / `tls-port`, `role`).
pub(super) fn shards(frame: &BytesFrame, tls: bool) -> Result<Vec<ShardInfo>, &'static str> {
    let mut out = Vec::new();
    for shard in array(frame)? {
        let (mut ranges, mut master, mut replicas) = (Vec::new(), None, Vec::new());
        for (name, value) in pairs(shard)? {
            match name {
                b"slots" => {
                    let bounds = array(value)?;
                    for pair in bounds.chunks(2) {
                        let [start, end] = pair else {
                            return Err("odd slot bounds");
                        };
                        ranges.push(range(integer(start)?, integer(end)?)?);
                    }
                }
                b"nodes" => {
                    for node in array(value)? {
                        let mut fields = std::collections::HashMap::new();
                        for (name, value) in pairs(node)? {
                            fields.insert(name, value);
                        }
                        let is_master =
                            fields.get(&b"role"[..]).and_then(|v| text(v)) == Some(b"master");
                        let host = ["endpoint", "ip"]
                            .iter()
                            .filter_map(|k| fields.get(k.as_bytes()).and_then(|v| text(v)))
                            .find(|h| !h.is_empty() && *h != b"?")
                            .ok_or("a master without an address")?;
                        let port_field = if tls && fields.contains_key(&b"tls-port"[..]) {
                            "tls-port"
                        } else {
                            "port"
                        };
                        let port = fields
                            .get(port_field.as_bytes())
                            .ok_or("a master without a port")
                            .and_then(|v| integer(v))?;
                        let at = (host_of(host)?, port_of(port)?);
                        if is_master {
                            master = Some(at);
                        } else {
                            replicas.push(at);
                        }
                    }
                }
                _ => {}
            }
        }
        // A master with no slots yet (a node just added) is kept: a resharding onto it answers `ASK`
        // naming it, and the router must know it then.
        if let Some(master) = master {
            out.push(ShardInfo {
                master,
                ranges,
                replicas,
            });
        }
    }
    Ok(merge(out))
}

/// `CLUSTER SLOTS`: per range `[start, end, [ip, port, id, ...], replicas...]`.
pub(super) fn slots(frame: &BytesFrame) -> Result<Vec<ShardInfo>, &'static str> {
    let mut out = Vec::new();
    for entry in array(frame)? {
        let [start, end, master, replicas @ ..] = array(entry)? else {
            return Err("a CLUSTER SLOTS entry without a master");
        };
        let node = |frame: &BytesFrame| -> Result<(String, u16), &'static str> {
            let [host, port, ..] = array(frame)? else {
                return Err("a node without host and port");
            };
            let host = text(host).ok_or("a host that is not a string")?;
            Ok((host_of(host)?, port_of(integer(port)?)?))
        };
        out.push(ShardInfo {
            master: node(master)?,
            ranges: vec![range(integer(start)?, integer(end)?)?],
            replicas: replicas.iter().map(node).collect::<Result<_, _>>()?,
        });
    }
    Ok(merge(out))
}

/// One entry per master, its ranges together (`CLUSTER SLOTS` lists a master once per range).
fn merge(shards: Vec<ShardInfo>) -> Vec<ShardInfo> {
    let mut out: Vec<ShardInfo> = Vec::new();
    for shard in shards {
        match out.iter_mut().find(|s| s.master == shard.master) {
            Some(known) => {
                known.ranges.extend(shard.ranges);
                known.replicas.extend(shard.replicas);
            }
            None => out.push(shard),
        }
    }
    out
}

fn array(frame: &BytesFrame) -> Result<&[BytesFrame], &'static str> {
    match frame {
        BytesFrame::Array(items) => Ok(items),
        _ => Err("expected an array"),
    }
}

/// A RESP2 map: an array of alternating names and values.
fn pairs(frame: &BytesFrame) -> Result<Vec<(&[u8], &BytesFrame)>, &'static str> {
    let items = array(frame)?;
    if items.len() % 2 != 0 {
        return Err("a map with an odd number of items");
    }
    items
        .chunks(2)
        .map(|pair| {
            Ok((
                text(&pair[0]).ok_or("a map key that is not a string")?,
                &pair[1],
            ))
        })
        .collect()
}

fn text(frame: &BytesFrame) -> Option<&[u8]> {
    match frame {
        BytesFrame::BulkString(b) | BytesFrame::SimpleString(b) => Some(b),
        _ => None,
    }
}

fn integer(frame: &BytesFrame) -> Result<i64, &'static str> {
    match frame {
        BytesFrame::Integer(i) => Ok(*i),
        _ => Err("expected an integer"),
    }
}

fn range(start: i64, end: i64) -> Result<(u16, u16), &'static str> {
    let ok = |n: i64| (0..SLOTS as i64).contains(&n);
    if !ok(start) || !ok(end) || start > end {
        return Err("a slot range outside 0..16384");
    }
    Ok((start as u16, end as u16))
}

fn port_of(port: i64) -> Result<u16, &'static str> {
    u16::try_from(port)
        .ok()
        .filter(|p| *p != 0)
        .ok_or("a port outside 1..65536")
}

fn host_of(host: &[u8]) -> Result<String, &'static str> {
    let host = std::str::from_utf8(host).map_err(|_| "a host that is not UTF-8")?;
    if host.is_empty() || host.len() > 255 || host.chars().any(char::is_control) {
        return Err("a host name that is empty, too long or has control characters");
    }
    Ok(host.to_string())
}

#[cfg(test)]
#[path = "topology_tests.rs"]
mod tests;
