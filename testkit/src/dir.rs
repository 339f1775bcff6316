//! [`TempDir`]: a fresh directory under the system temp dir, removed (with its contents) when dropped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A directory of one owner's own: a node's `--dir` (where a replica's full sync writes `dump.rdb`),
/// a cluster's `nodes.conf` files, a sentinel's configuration. Removed when dropped.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `<temp>/redlock-<what>-<pid>-<n>`, `n` counting up within the process.
    ///
    /// # Panics
    /// If the directory cannot be created.
    pub fn new(what: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "redlock-{what}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // A leftover of an earlier process with the same pid would hold stale files: start empty.
        let _ = std::fs::remove_dir_all(&dir);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            panic!("cannot create {}: {e}", dir.display());
        }
        Self(dir)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
