//! The protocol: what the engine sends to a node and how a node's answer reads, below the engine and
//! above the pure algorithm. Nothing here does I/O, and nothing here names the engine or a kind.
//!
//! - `cmd`: [`cmd::Cmd`] (one operation on one node), [`cmd::Script`], keys and arguments; the
//!   reply types come from `crate::algo::reply`.
//! - `spec`: what a kind of lock is as data ([`spec::Spec`]), a lock's [`spec::Kind`], an acquire's
//!   [`spec::Target`], a kind's extra keys ([`spec::Suffix`]) and the public [`spec::LockKind`].
//! - `catalog`: the list of kinds as the engine receives it, and what is derived from it (the
//!   handshake's scripts, a resource's keys, the kind of a value's code).
//! - `scripts`: the scripts the single-key kinds share (release, extend, the waiter mark, their
//!   coalesced forms).
//! - `handoff`: the plain lock's cross-process hand-off: the take-over acquire and the release that
//!   grants the key to the oldest waiter elsewhere (its safety argument); `grant`: the grant's Lua
//!   fragment, which the notify releases of `scripts` run too.
//! - `inspect`: what inspect reads ([`inspect::KeyState`]) and its script, built from a prelude and
//!   each kind's part ([`inspect::InspectPart`], declared in the kind's file).
//! - `operator`: forced release, which takes its keys by suffix, not by position.
//! - `server`: what a handshake learns of a node's server ([`server::Server`]) and the rendering
//!   [`server::Profile`] each connection encodes its commands with: the per-node command seam.
//! - `native`: the shared single-key scripts' operations as native commands (`DELIFEQ`,
//!   `SET ... IFEQ ... GET`) and how their replies read as the scripts' answers (the argument).

pub(crate) mod catalog;
pub(crate) mod cmd;
pub(crate) mod grant;
pub(crate) mod handoff;
pub(crate) mod inspect;
pub(crate) mod native;
pub(crate) mod operator;
pub(crate) mod scripts;
pub(crate) mod server;
pub(crate) mod spec;
