//! A redis-server whose wall clock a test can step at runtime, for node-clock-jump tests: the node
//! runs under `scripts/clockshim/clockshim.c` (an `LD_PRELOAD` shim, built here with `cc` once per
//! test process) and reads its clock offset from a file this helper maps and writes.

use std::fs::OpenOptions;
use std::ops::{Deref, DerefMut};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::RedisNode;

/// A node under the clock shim. Derefs to its [`RedisNode`] (`url()`, `port`, `cmd`, `freeze`, …;
/// `restart` keeps the shim and the offset). Stopped by pid when dropped, like any node.
pub struct SteppableNode {
    node: RedisNode, // declared first: the server stops before its offset file goes
    offset: OffsetFile,
}

impl SteppableNode {
    /// Starts a node on a free port with a wall-clock offset of 0.
    pub fn start() -> Self {
        let offset = OffsetFile::create();
        let node = RedisNode::start_with_env(
            &[],
            &[
                ("LD_PRELOAD", path_str(shim())),
                ("CLOCKSHIM_FILE", path_str(&offset.path)),
            ],
        );
        Self { node, offset }
    }

    /// The node's wall clock is `ms` milliseconds ahead of the host's (behind if negative) from its
    /// next clock read on.
    pub fn set_offset(&self, ms: i64) {
        self.offset.cell().store(ms, Ordering::SeqCst);
    }

    /// Steps the node's wall clock by `by_ms` milliseconds (back if negative).
    pub fn step(&self, by_ms: i64) {
        self.offset.cell().fetch_add(by_ms, Ordering::SeqCst);
    }

    /// The current offset in milliseconds.
    pub fn offset(&self) -> i64 {
        self.offset.cell().load(Ordering::SeqCst)
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

/// The node's `TIME` in microseconds since the epoch. Through EVAL so the reply is one integer
/// (`RedisNode::cmd` reads scalar replies only).
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

/// The shim, built once per test process into `target/tmp/clockshim/` (rebuilt each run, so an edit
/// to the C source is always picked up).
pub fn shim() -> &'static Path {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| {
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/clockshim/clockshim.c");
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("clockshim");
        std::fs::create_dir_all(&dir).unwrap();
        // Built under a per-process name, then renamed into place: other test binaries may be
        // building it or running servers from it at the same time (rename swaps it atomically).
        let tmp = dir.join(format!("clockshim.{}.so", std::process::id()));
        let out = Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&tmp)
            .arg(src)
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run `cc` ({e}), needed to build the clock shim {src}; \
                     install a C compiler (Debian: `apt-get install -y gcc`)"
                )
            });
        assert!(
            out.status.success(),
            "cc could not build the clock shim {src}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let so = dir.join("clockshim.so");
        std::fs::rename(&tmp, &so).unwrap();
        so
    })
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("the clock shim's paths are UTF-8")
}

/// The 8-byte offset file, mapped shared: a store here is one aligned 8-byte write into the same
/// page the server's shim reads, so the server never sees half an offset (a `pwrite` promises less).
struct OffsetFile {
    path: PathBuf,
    map: *mut libc::c_void,
}

// SAFETY: the mapping is owned by this value and only ever accessed through an AtomicI64.
unsafe impl Send for OffsetFile {}
unsafe impl Sync for OffsetFile {}

impl OffsetFile {
    fn create() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "clockshim/offset-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.set_len(8).unwrap(); // eight zero bytes: offset 0
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
        assert_ne!(map, libc::MAP_FAILED, "mmap of {path:?} failed");
        Self { path, map }
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
