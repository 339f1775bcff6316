//! The workspace's test kit: the one place that starts `redis-server`. Real processes on free loopback
//! ports, real signals, no mocks; everything it starts is stopped by pid, and every directory it makes
//! is removed, when its owner is dropped.
//!
//! # Layout
//! - `node`: [`RedisNode`], one standalone server in a data directory of its own ([`NodeSpec`] says
//!   how it is started: arguments, binary, directory, tied to its starter, own process group), with
//!   kill -9, restart on the same port, SIGSTOP/SIGCONT; [`nodes`], [`urls`]; [`StartError`] for a
//!   starter that reports instead of panicking (loadgen).
//! - `sentinel`: [`replica_of`] and [`SentinelSet`] (a master, a replica and a Sentinel).
//! - `cluster`: [`RedisCluster`], a local Redis Cluster made by `redis-cli --cluster create`, with
//!   replicas if asked, a master added later (`CLUSTER MEET`), `CLUSTER FAILOVER`, role and
//!   redirect-count look-ups, ACL users on every member, [`RedisCluster::start_tls`] over TLS (clients,
//!   bus and replication); `reshard`: moving one slot between masters step by step
//!   (`SETSLOT ... MIGRATING/IMPORTING`, `MIGRATE`, `SETSLOT ... NODE`); `cluster_tls`: what TLS adds to
//!   a member, from the caller's [`TlsFiles`].
//! - `proxy`: [`Proxy`], a TCP proxy that delays, blackholes, hangs or resets (one [`Mode`] at a time).
//! - `hostile`: [`Hostile`], a RESP server that answers the handshake like Redis and chosen commands
//!   with crafted bytes.
//! - `clock`: [`SteppableNode`], a server under the `scripts/clockshim` preload whose wall clock can
//!   be stepped at runtime, and the pieces chaos builds its own from ([`clock::build_shim`],
//!   [`clock::OffsetFile`]).
//! - `server`: which server the kit starts ([`server::current`], from `redis-server --version`),
//!   another server of the matrix by name ([`server::binary`]), and [`server::skip_unless`] for the
//!   tests a server cannot run (they say so and skip).
//! - `resp`: the smallest RESP client, one command per connection, replies as text.
//! - `dir`: [`TempDir`], removed when dropped. `port`: [`free_port`], [`dead_url`]. `signal`: kill(2),
//!   and [`die_with_parent`] (`PR_SET_PDEATHSIG`) for every child a long-lived process starts.
//!
//! Used as a dev-dependency by every crate's tests, benches and examples, and as a normal dependency
//! by loadgen and chaos (binaries that start their nodes, and fault them, at run time). `publish = false`.

pub mod clock;
pub mod cluster;
pub mod cluster_tls;
pub mod dir;
pub mod hostile;
pub mod node;
pub mod port;
pub mod proxy;
pub mod reshard;
pub mod resp;
pub mod sentinel;
pub mod server;
pub mod signal;

pub use clock::SteppableNode;
pub use cluster::RedisCluster;
pub use cluster_tls::TlsFiles;
pub use dir::TempDir;
pub use hostile::{Action, Hostile};
pub use node::{nodes, urls, NodeSpec, RedisNode, StartError};
pub use port::{dead_url, free_port};
pub use proxy::{Mode, Proxy};
pub use sentinel::{replica_of, SentinelSet};
pub use signal::die_with_parent;
