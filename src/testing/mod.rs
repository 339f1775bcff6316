//! Memory nodes for a service's own tests (feature `testing`): nodes that are not Redis, run in the
//! test's process and keep everything in memory, with the fault hooks a test of a service's lock
//! handling needs — a key expired under its holder, a node paused, stopped, restarted empty, its
//! clock stepped.
//!
//! Each [`MemoryNode`] is a RESP server on `127.0.0.1`, so the engine reaches it with its real
//! transport (the pipelined connection, the handshake, the release subscriber) unchanged. It answers
//! the commands the engine sends, with Redis 7.0's replies and errors for what the engine relies on,
//! and runs the engine's Lua scripts — their real sources — in a vendored Lua 5.1, the version Redis
//! embeds. A differential test sends the same random operations to a real `redis-server` and to a
//! memory node and requires the same replies and key states, so the two cannot drift apart
//! unnoticed.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use redlock_engine::testing::MemoryNodes;
//!
//! let nodes = MemoryNodes::start(3).await?;
//! let redlock = nodes.redlock().await?;
//! let guard = redlock.lock("report:7").ttl(Duration::from_secs(30)).await?;
//! // The lock's key expires on two of three nodes: the lock is lost.
//! nodes.node(0).expire_resource("redlock:", "report:7");
//! nodes.node(1).expire_resource("redlock:", "report:7");
//! assert!(!guard.is_held().await?);
//! # Ok(()) }
//! ```
//!
//! What it is not: a Redis. It has one database, no persistence, no replication, no cluster, no
//! password, only the commands listed in `commands`, and RESP2 only.
//!
//! # Layout
//! - `nodes`: [`MemoryNodes`], a node set and an engine on it; `node`: [`MemoryNode`] and its hooks.
//! - `listener`: a node's listening life; `conn`: one connection (pipelining, pub/sub, the pause);
//!   `request`: reading commands; `reply`: writing replies; `shared`: what a node's tasks share.
//! - `state`: a node's state (data, scripts, identity); `db`: its data (`keyspace`, `channels`,
//!   `clock`); `zset`: the sorted set.
//! - `commands`: the one list of commands and both dispatches; the commands by family: `strings`,
//!   `generic`, `sorted`, `hashes`, `pubsub`, `eval` (scripting), `admin` (the server's own).
//! - `lua`: the Lua interpreter, Redis's scripting environment and conversions, the script cache.

mod admin;
mod channels;
mod clock;
mod commands;
mod conn;
mod db;
#[cfg(test)]
mod differential_tests;
mod eval;
mod generic;
mod hashes;
mod keyspace;
mod listener;
mod lua;
mod node;
mod nodes;
mod pubsub;
mod reply;
mod request;
mod shared;
mod sorted;
mod state;
mod strings;
mod zset;

pub use node::MemoryNode;
pub use nodes::MemoryNodes;
