//! A redis-server whose wall clock can be stepped at runtime, for node-clock-jump tests and chaos's
//! scenario 16: the server runs under `scripts/clockshim/clockshim.c` (an `LD_PRELOAD` shim: the
//! server's wall clock is the real one plus an offset in ms read from a mapped file named by
//! `CLOCKSHIM_FILE`; the C file says why libfaketime cannot do this to Redis), built with `cc` from
//! the source embedded here.

use std::fs::OpenOptions;
use std::ops::{Deref, DerefMut};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::node::{NodeSpec, RedisNode};

const SOURCE: &str = include_str!("../../scripts/clockshim/clockshim.c");

/// Why the shim could not be built.
#[derive(Debug, Clone)]
pub enum ShimError {
    /// No C compiler (`cc` cannot be run).
    NoCompiler(String),
    /// `cc` ran and failed, or the files could not be written.
    Failed(String),
}

impl ShimError {
    /// What went wrong, and how to fix it.
    pub fn why(&self) -> &str {
        match self {
            Self::NoCompiler(why) | Self::Failed(why) => why,
        }
    }
}

/// Builds the shim into `dir/clockshim.so` (`dir` created if missing); its path. Built under a
/// per-process name and renamed into place: other processes may be building it or running servers
/// from it at the same time (the rename swaps it atomically).
pub fn build_shim(dir: &Path) -> Result<PathBuf, ShimError> {
    let failed = |e: String| ShimError::Failed(e);
    std::fs::create_dir_all(dir).map_err(|e| failed(format!("{}: {e}", dir.display())))?;
    let pid = std::process::id();
    let src = dir.join(format!("clockshim.{pid}.c"));
    std::fs::write(&src, SOURCE).map_err(|e| failed(format!("{}: {e}", src.display())))?;
    let tmp = dir.join(format!("clockshim.{pid}.so"));
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&tmp)
        .arg(&src)
        .output()
        .map_err(|e| {
            ShimError::NoCompiler(format!(
                "cannot run `cc` ({e}), needed to build the clock shim; \
                 `sudo apt-get install -y gcc` enables it"
            ))
        })?;
    let _ = std::fs::remove_file(&src);
    if !out.status.success() {
        return Err(failed(format!(
            "cc could not build the clock shim: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let so = dir.join("clockshim.so");
    std::fs::rename(&tmp, &so).map_err(|e| failed(format!("{}: {e}", so.display())))?;
    Ok(so)
}

/// The shim for this process, built once (into `<temp>/redlock-clockshim-<uid>`, shared with other
/// processes of the same user and rebuilt by each, so an edit to the C source is always picked up).
///
/// # Panics
/// If it cannot be built.
pub fn shim() -> &'static Path {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| {
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let dir = std::env::temp_dir().join(format!("redlock-clockshim-{uid}"));
        build_shim(&dir).unwrap_or_else(|e| panic!("{}", e.why()))
    })
}

/// A node under the clock shim. Derefs to its [`RedisNode`] (`url()`, `port`, `cmd`, `freeze`, …;
/// `restart` keeps the shim and the offset). Stopped by pid when dropped, like any node.
#[derive(Debug)]
pub struct SteppableNode {
    node: RedisNode, // declared first: the server stops before its offset file goes
    offset: OffsetFile,
}

impl SteppableNode {
    /// Starts a node on a free port with a wall-clock offset of 0.
    pub fn start() -> Self {
        let offset = OffsetFile::create_temp();
        let node = RedisNode::start_spec(offset.node_spec(shim()));
        Self { node, offset }
    }

    /// The node's wall clock is `ms` milliseconds ahead of the host's (behind if negative) from its
    /// next clock read on.
    pub fn set_offset(&self, ms: i64) {
        self.offset.set(ms);
    }

    /// Steps the node's wall clock by `by_ms` milliseconds (back if negative).
    pub fn step(&self, by_ms: i64) {
        self.offset.step(by_ms);
    }

    /// The current offset in milliseconds.
    pub fn offset(&self) -> i64 {
        self.offset.get()
    }
}

impl Deref for SteppableNode {
    type Target = RedisNode;
    fn deref(&self) -> &RedisNode {
        &self.node
    }
}

impl DerefMut for SteppableNode {
    fn deref_mut(&mut self) -> &mut RedisNode {
        &mut self.node
    }
}

/// The node's `TIME` in microseconds since the epoch. Through EVAL so the reply is one integer.
pub fn server_time_us(node: &RedisNode) -> i64 {
    let reply = node.cmd(&[
        b"EVAL",
        b"local t = redis.call('TIME') return t[1] * 1000000 + t[2]",
        b"0",
    ]);
    reply
        .parse()
        .unwrap_or_else(|_| panic!("TIME via EVAL answered {reply:?}"))
}

/// The 8-byte offset file, mapped shared: a store here is one aligned 8-byte write into the same
/// page the server's shim reads, so the server never sees half an offset (a `pwrite` promises less).
/// Removed when dropped.
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
        let len = std::mem::size_of::<i64>();
        // SAFETY: a fresh shared mapping of an 8-byte file we own; checked for failure below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
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

    /// A new file in the system temp dir, named for this process.
    ///
    /// # Panics
    /// If it cannot be created.
    pub fn create_temp() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "redlock-clockshim-offset-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        Self::create(path).unwrap_or_else(|e| panic!("{e}"))
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

    /// Sets the offset to `ms`, from the server's next clock read on.
    pub fn set(&self, ms: i64) {
        self.cell().store(ms, Ordering::SeqCst);
    }

    /// Steps the offset by `by_ms` milliseconds (back if negative).
    pub fn step(&self, by_ms: i64) {
        self.cell().fetch_add(by_ms, Ordering::SeqCst);
    }

    /// The current offset in milliseconds.
    pub fn get(&self) -> i64 {
        self.cell().load(Ordering::SeqCst)
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
