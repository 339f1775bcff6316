//! The tests that install a `tracing` subscriber and a `metrics` recorder of their own, in a binary
//! of their own and one at a time: `tracing` caches each callsite's interest process-wide, so a
//! thread-local subscriber in one test races every other thread that creates or drops one (in the
//! shared `it` binary the debug events of `observe` were, now and then, not delivered at all).

// The shared test helpers still use the deprecated per-kind methods.
#![allow(deprecated)]

#[allow(unused_imports)]
#[path = "../it/common/mod.rs"]
mod common;
mod observe;
mod signals;

use std::io::Write;
use std::sync::{Arc, Mutex};

/// Held by each test for its whole run: one subscriber and recorder at a time in this process.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What a test's `tracing` subscriber wrote: a `Write` sink it can read back.
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// Everything written so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}
