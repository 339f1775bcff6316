//! The tests that install a `tracing` subscriber and a `metrics` recorder of their own, in a binary
//! of their own and one at a time: `tracing` caches each callsite's interest process-wide, so a
//! thread-local subscriber in one test races every other thread that creates or drops one (in the
//! shared `it` binary the debug events of `observe` were, now and then, not delivered at all).

#[allow(unused_imports)]
#[path = "../it/common/mod.rs"]
mod common;
mod observe;
mod signals;

/// Held by each test for its whole run: one subscriber and recorder at a time in this process.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
