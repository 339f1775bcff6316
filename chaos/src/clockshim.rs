//! Scenario 16's setup: a redis-server whose wall clock the orchestrator steps at runtime. The node runs
//! under the workspace's `scripts/clockshim/clockshim.c` (an `LD_PRELOAD` shim: the server's wall
//! clock is the real one plus an offset in ms read from a mapped file named by `CLOCKSHIM_FILE`; the
//! C file says why libfaketime cannot do this to Redis). The shim is compiled once per suite run
//! with `cc`, from the source embedded in this binary, so the binary works from any directory.
//! Without `cc` scenario 16 is skipped with a message saying how to get it.
//!
//! The [`OffsetFile`] is the same as `tests/common/clock.rs`'s: that file belongs to the library's
//! integration tests (it builds with `CARGO_TARGET_TMPDIR` and its own `RedisNode`), so the ~50 lines
//! are repeated here rather than shared across the two crates.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::node::NodeSpec;

const SOURCE: &str = include_str!("../../scripts/clockshim/clockshim.c");

/// Why the shim is not there.
#[derive(Debug, Clone)]
pub enum Unavailable {
    /// No C compiler: scenario 16 is skipped.
    NoCompiler(String),
    /// `cc` ran and failed, or the files could not be written: scenario 16 fails.
    Failed(String),
}

impl Unavailable {
    /// What went wrong, and how to fix it.
    pub fn why(&self) -> &str {
        match self {
            Self::NoCompiler(why) | Self::Failed(why) => why,
        }
    }
}

/// Builds the shim into `dir/clockshim.so`; its path.
pub fn build(dir: &Path) -> Result<PathBuf, Unavailable> {
    let failed = |e: String| Unavailable::Failed(e);
    std::fs::create_dir_all(dir).map_err(|e| failed(format!("{}: {e}", dir.display())))?;
    let src = dir.join("clockshim.c");
    std::fs::write(&src, SOURCE).map_err(|e| failed(format!("{}: {e}", src.display())))?;
    let so = dir.join("clockshim.so");
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&so)
        .arg(&src)
        .output()
        .map_err(|e| {
            Unavailable::NoCompiler(format!(
                "cannot run `cc` ({e}), needed to build the clock shim; \
                 `sudo apt-get install -y gcc` enables it"
            ))
        })?;
    if !out.status.success() {
        return Err(failed(format!(
            "cc could not build the clock shim: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(so)
}

/// The 8-byte offset file, mapped shared: a store here is one aligned 8-byte write into the same
/// page the server's shim reads, so the server never sees half an offset (a `pwrite` promises less).
#[derive(Debug)]
pub struct OffsetFile {
    path: PathBuf,
    map: *mut libc::c_void,
}

// SAFETY: the mapping is owned by this value and only ever accessed through an AtomicI64.
unsafe impl Send for OffsetFile {}
unsafe impl Sync for OffsetFile {}

impl OffsetFile {
    /// A new file at `path` holding offset 0.
    pub fn create(path: PathBuf) -> Result<Self, String> {
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(io)?;
        file.set_len(8).map_err(io)?; // eight zero bytes: offset 0
                                      // SAFETY: a fresh shared mapping of an 8-byte file we own; checked for failure below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                std::mem::size_of::<i64>(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(format!("mmap of {} failed", path.display()));
        }
        Ok(Self { path, map })
    }

    /// The spec of a node under the shim `so`, reading this file.
    pub fn node_spec(&self, so: &Path) -> NodeSpec {
        NodeSpec {
            env: vec![
                ("LD_PRELOAD".into(), so.display().to_string()),
                ("CLOCKSHIM_FILE".into(), self.path.display().to_string()),
            ],
            ..NodeSpec::default()
        }
    }

    /// Steps the node's wall clock by `by_ms` milliseconds (back if negative), from its next read on.
    pub fn step(&self, by_ms: i64) {
        self.cell().fetch_add(by_ms, Ordering::SeqCst);
    }

    fn cell(&self) -> &AtomicI64 {
        // SAFETY: the mapping is page-aligned, 8 bytes long and lives as long as `self`.
        unsafe { AtomicI64::from_ptr(self.map.cast()) }
    }
}

impl Drop for OffsetFile {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping made in `create`; nothing refers to it past `self`.
        unsafe { libc::munmap(self.map, std::mem::size_of::<i64>()) };
        let _ = std::fs::remove_file(&self.path);
    }
}
